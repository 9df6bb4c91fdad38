#include "stoker/train/script_export.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

namespace stoker {
namespace {

namespace nn = torch::nn;

// A module of its own whose TorchScript is given (and may be wrong).
struct Scaled : nn::Module, ScriptableModule {
  explicit Scaled(std::string source) : source_(std::move(source)) {
    register_module("0", nn::Linear(2, 2));
  }
  std::string script_class() const override { return "Scaled"; }
  std::string script_forward() const override { return source_; }
  std::string source_;
};

TEST(ScriptExportTest, AttributesThatAreNotIdentifiersGoThroughGetattr) {
  EXPECT_EQ(script_attribute("fc1"), "self.fc1");
  EXPECT_EQ(script_attribute("_x"), "self._x");
  EXPECT_EQ(script_attribute("0"), "getattr(self, \"0\")");
  EXPECT_EQ(script_attribute("a-b"), "getattr(self, \"a-b\")");
}

TEST(ScriptExportTest, MirrorsTheModuleTree) {
  nn::Sequential net({{"conv", nn::Conv2d(nn::Conv2dOptions(1, 2, 3).stride(2).padding(1))},
                      {"flatten", nn::Flatten()},
                      {"fc", nn::Linear(2 * 2 * 2, 3)}});
  net->eval();
  Result<torch::jit::Module> script = to_script_module(*net, "net");
  ASSERT_TRUE(script.is_ok()) << script.status().message();
  EXPECT_EQ(script.value().type()->name()->qualifiedName(), "__torch__.stoker.net");
  EXPECT_FALSE(script.value().is_training());
  const at::Tensor x = torch::rand({2, 1, 4, 4});
  EXPECT_TRUE(script.value().forward({x}).toTensor().equal(net->forward(x)));
  // Copies: writing into the script's tensors leaves the module's alone.
  script.value().attr("fc").toModule().attr("bias").toTensor().detach().add_(1);
  EXPECT_TRUE(script.value().forward({x}).toTensor().allclose(net->forward(x) + 1));
}

TEST(ScriptExportTest, WhatItCannotWriteIsAStatus) {
  nn::Sequential dropout({{"fc", nn::Linear(2, 2)}, {"drop", nn::Dropout(0.5)}});
  Status unknown = to_script_module(*dropout, "net").status();
  EXPECT_EQ(unknown.code(), StatusCode::kUnsupported);
  EXPECT_NE(
      unknown.message().find("cannot write module 'drop' (torch::nn::DropoutImpl) as TorchScript"),
      std::string::npos)
      << unknown.message();

  nn::Sequential reflect(
      {{"conv", nn::Conv2d(nn::Conv2dOptions(1, 1, 3).padding(1).padding_mode(torch::kReflect))}});
  EXPECT_EQ(to_script_module(*reflect, "net").status().code(), StatusCode::kUnsupported);

  Scaled good("def forward(self, x: Tensor) -> Tensor:\n    return " + script_attribute("0") +
              ".forward(x) * 2.0\n");
  ASSERT_TRUE(to_script_module(good, "scaled").is_ok());
  Scaled bad("def forward(self, x: Tensor) -> Tensor:\n    return self.missing.forward(x)\n");
  Status wrong = to_script_module(bad, "scaled").status();
  EXPECT_EQ(wrong.code(), StatusCode::kInternal);
  EXPECT_NE(wrong.message().find("cannot write model scaled as TorchScript: "), std::string::npos)
      << wrong.message();
  EXPECT_NE(wrong.message().find("missing"), std::string::npos) << wrong.message();
  EXPECT_EQ(wrong.message().find('\n'), std::string::npos) << wrong.message();
}

}  // namespace
}  // namespace stoker
