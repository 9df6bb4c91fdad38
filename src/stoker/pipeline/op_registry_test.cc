#include "stoker/pipeline/op_registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "stoker/util/utf8.h"

namespace stoker {
namespace {

std::string error_of(const Result<OpCall>& call) {
  EXPECT_FALSE(call.is_ok());
  return call.is_ok() ? "" : call.status().message();
}

TEST(OpRegistryTest, EveryOperationIsListedOnceByName) {
  std::vector<std::string> names;
  for (const OpSpec& op : operations()) names.push_back(op.name);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const char* name : {"busy_wait", "center_crop", "normalize", "random_resized_crop"})
    EXPECT_EQ(find_operation(name).value()->name, name);
  EXPECT_EQ(find_operation("color_jitter").value()->python_class, "ColorJitter");
  EXPECT_EQ(
      find_operation("colour_jitter").status().message(),
      fmt::format("unknown operation 'colour_jitter' (operations: {})", fmt::join(names, ", ")));
}

// What each operation takes and makes (sample_type.h), in the table and its JSON: its role's
// types, a source's output its own (a decoder's varying images, raw bytes, a synthetic int64).
TEST(OpRegistryTest, EveryOperationDeclaresWhatItTakesAndMakes) {
  const nlohmann::json described = nlohmann::json::parse(operations_json());
  ASSERT_EQ(described.size(), operations().size());
  for (size_t i = 0; i < described.size(); ++i) {
    const OpSpec& op = operations()[i];
    ASSERT_TRUE(op.input && op.output) << op.name;
    EXPECT_EQ(*op.input, role_types(op.role).input) << op.name;
    if (op.role != OpRole::kSource) {
      EXPECT_EQ(*op.output, role_types(op.role).output) << op.name;
    }
    EXPECT_EQ(described[i]["input"]["layout"], to_string(op.input->layout)) << op.name;
    EXPECT_EQ(described[i]["output"]["dtype"], dtype_name(op.output->dtype)) << op.name;
    EXPECT_EQ(described[i]["output"]["variable"], op.output->variable) << op.name;
  }
  const auto output = [](const char* name) { return *find_operation(name).value()->output; };
  EXPECT_EQ(output("random_resized_crop"), kUint8Image);
  EXPECT_EQ(output("decode_image"), (SampleType{Layout::kImage, DType::kUint8, true}));
  EXPECT_EQ(output("raw_bytes"), (SampleType{Layout::kArray, DType::kUint8, true}));
  EXPECT_EQ(output("busy_wait"), (SampleType{Layout::kArray, DType::kInt64, false}));
  EXPECT_EQ(*find_operation("normalize").value()->output, kFloatImage);
  EXPECT_EQ(describe(output("decode_image")), "uint8 images [C, H, W] of varying size");
}

TEST(OpRegistryTest, ACallGetsItsDefaultsTypedInTheSpecsOrder) {
  const OpCall call =
      make_op_call("random_resized_crop", {{"flip", int64_t{1}}, {"size", int64_t{32}}}).value();
  EXPECT_EQ(call.op->name, "random_resized_crop");
  EXPECT_EQ(call.params.integer("size"), 32);
  EXPECT_EQ(call.params.real("flip"), 1.0);  // an int given for a float
  EXPECT_EQ(call.params.reals("scale"), (std::vector<double>{0.08, 1.0}));
  EXPECT_FALSE(call.params.flag("dct_scaling"));
  std::vector<std::string> order;
  for (const auto& [name, value] : call.params.values()) order.push_back(name);
  EXPECT_EQ(order, (std::vector<std::string>{"size", "width", "scale", "ratio", "flip",
                                             "interpolation", "backend", "dct_scaling"}));
  EXPECT_EQ(call.params.choice("interpolation"), "bilinear");
  // A number for a list of numbers is a list of one.
  EXPECT_EQ(make_op_call("normalize", {{"mean", 0.5}}).value().params.reals("mean"),
            std::vector<double>{0.5});
}

TEST(OpRegistryTest, AWrongParameterIsOneLineNamingOperationParameterAndValue) {
  const auto call = [](const std::string& op, const std::string& name, ParamValue value) {
    return error_of(make_op_call(op, {{name, std::move(value)}}));
  };
  EXPECT_EQ(call("color_jitter", "brightness", -1.0),
            "color_jitter: brightness must be a number at least 0, not -1");
  EXPECT_EQ(call("color_jitter", "brightness", std::string("bright")),
            "color_jitter: brightness must be a number at least 0, not 'bright'");
  EXPECT_EQ(call("color_jitter", "brightness", true),
            "color_jitter: brightness must be a number at least 0, not true");
  EXPECT_EQ(call("random_resized_crop", "flip", 1.5),
            "random_resized_crop: flip must be a number in [0, 1], not 1.5");
  EXPECT_EQ(call("random_resized_crop", "size", int64_t{0}),
            "random_resized_crop: size must be a whole number in [1, 32768], not 0");
  EXPECT_EQ(call("random_resized_crop", "size", 32.5),
            "random_resized_crop: size must be a whole number in [1, 32768], not 32.5");
  EXPECT_EQ(call("random_resized_crop", "scale", std::vector<double>{0, 1}),
            "random_resized_crop: scale must be 2 numbers above 0, not [0, 1]");
  EXPECT_EQ(call("random_resized_crop", "scale", std::vector<double>{0.5}),
            "random_resized_crop: scale must be 2 numbers above 0, not [0.5]");
  EXPECT_EQ(call("random_resized_crop", "dct_scaling", int64_t{1}),
            "random_resized_crop: dct_scaling must be true or false, not 1");
  EXPECT_EQ(call("normalize", "std", std::vector<double>{}),
            "normalize: std must be 1 or more finite numbers, not []");
  EXPECT_EQ(call("normalize", "mean", std::nan("")),
            "normalize: mean must be 1 or more finite numbers, not nan");
  EXPECT_EQ(call("color_jitter", "sharpness", 0.1),
            "color_jitter: unknown parameter 'sharpness' (parameters: brightness, contrast, "
            "saturation, hue, backend)");
  EXPECT_EQ(error_of(make_op_call("color_jitter", {{"contrast", 0.1}, {"contrast", 0.2}})),
            "color_jitter: contrast is given twice");
}

TEST(OpRegistryTest, CommandLineTextParsesByTheParametersTypes) {
  const OpCall call =
      parse_op_call("random_resized_crop:size=64,scale=[0.5,1],dct_scaling=true").value();
  EXPECT_EQ(call.params.integer("size"), 64);
  EXPECT_EQ(call.params.reals("scale"), (std::vector<double>{0.5, 1.0}));
  EXPECT_TRUE(call.params.flag("dct_scaling"));
  EXPECT_EQ(parse_op_call("color_jitter").value().params.real("brightness"), 0.0);
  // The same message as a typed value's.
  EXPECT_EQ(error_of(parse_op_call("color_jitter:brightness=-1")),
            "color_jitter: brightness must be a number at least 0, not -1");
  EXPECT_EQ(error_of(parse_op_call("color_jitter:brightness=0.4x")),
            "color_jitter: brightness must be a number at least 0, not '0.4x'");
  EXPECT_EQ(error_of(parse_op_call("random_resized_crop:size=1e3")),
            "random_resized_crop: size must be a whole number in [1, 32768], not '1e3'");
  EXPECT_EQ(error_of(parse_op_call("color_jitter:brightness")),
            "color_jitter: 'brightness' is not key=value (write color_jitter:key=value,key=value)");
  EXPECT_EQ(error_of(parse_op_call("")).rfind("unknown operation ''", 0), 0u);
}

TEST(OpRegistryTest, TextRoundTripsEveryOperationsCall) {
  for (const OpSpec& op : operations()) {
    const OpCall call = make_op_call(op.name, {}).value();
    const std::string text = to_text(call);
    const OpCall back = parse_op_call(text).value();
    EXPECT_EQ(back.op, call.op) << text;
    EXPECT_EQ(back.params.values(), call.params.values()) << text;
  }
  const OpCall jitter = parse_op_call("color_jitter:contrast=0.25").value();
  EXPECT_EQ(to_text(jitter),
            "color_jitter:brightness=0,contrast=0.25,saturation=0,hue=0,backend=tensor");
}

// The description Python and `stoker ops --json` read says what the specs say.
// A name, key or value with a line break or bytes that are not UTF-8 is named printably, on
// one line (found by fuzz/op_call_fuzz.cc).
TEST(OpRegistryTest, UntrustedTextIsNamedOnOneLine) {
  EXPECT_EQ(parse_op_call("busy_wa\xff\n:microseconds=0").status().message().substr(0, 39),
            "unknown operation 'busy_wa\\xff\\x0a' (op");
  EXPECT_EQ(parse_op_call("random_erasing:fi\nll=1").status().message().substr(0, 44),
            "random_erasing: unknown parameter 'fi\\x0all'");
  EXPECT_EQ(parse_op_call("random_erasing:fill=ran\ndom").status().message(),
            "random_erasing: fill must be one of value, random, not 'ran\\x0adom'");
  EXPECT_EQ(parse_op_call("random_erasing:p\n").status().message(),
            "random_erasing: 'p\\x0a' is not key=value (write random_erasing:key=value,key=value)");
}

TEST(OpRegistryTest, AChoiceIsOneOfItsNamesAsTextOrTyped) {
  EXPECT_EQ(parse_op_call("random_resized_crop:interpolation=bicubic")
                .value()
                .params.choice("interpolation"),
            "bicubic");
  EXPECT_EQ(make_op_call("center_crop", {{"interpolation", std::string("bicubic")}})
                .value()
                .params.choice("interpolation"),
            "bicubic");
  EXPECT_EQ(parse_op_call("center_crop:interpolation=random").status().message(),
            "center_crop: interpolation must be one of bilinear, bicubic, not 'random'");
  EXPECT_EQ(make_op_call("random_resized_crop", {{"interpolation", int64_t{2}}}).status().message(),
            "random_resized_crop: interpolation must be one of bilinear, bicubic, random, not 2");
  const OpCall call = parse_op_call("random_erasing:fill=random,value=[1,2,3]").value();
  EXPECT_EQ(to_text(call),
            "random_erasing:p=0.5,scale=[0.02,0.33],ratio=[0.3,3.3],value=[1,2,3],fill=random");
  EXPECT_EQ(to_text(parse_op_call(to_text(call)).value()), to_text(call));
}

TEST(OpRegistryTest, TextIsAnyShortPrintableTextThatKeepsTheCallOneCall) {
  const OpCall call = parse_op_call("timm_rand_augment:config=rand-m7-n3=x:y").value();
  EXPECT_EQ(call.params.text("config"), "rand-m7-n3=x:y");
  EXPECT_EQ(to_text(parse_op_call(to_text(call)).value()), to_text(call));
  for (const std::string& bad : std::vector<std::string>{
           "rand;m9", "rand[", "rand]", std::string(257, 'r'), std::string("rand\nm9")}) {
    EXPECT_EQ(make_op_call("timm_rand_augment", {{"config", bad}}).status().message(),
              "timm_rand_augment: config must be text of up to 256 printable characters but , ; "
              "[ ], not '" +
                  printable(bad) + "'")
        << bad;
  }
  EXPECT_EQ(make_op_call("timm_rand_augment", {{"config", 1.5}}).status().message(),
            "timm_rand_augment: config must be text of up to 256 printable characters but , ; "
            "[ ], not 1.5");
}

TEST(OpRegistryTest, TheJsonDescriptionHoldsEveryParametersTypeDefaultAndBounds) {
  const nlohmann::json all = nlohmann::json::parse(operations_json());
  ASSERT_EQ(all.size(), operations().size());
  for (size_t i = 0; i < all.size(); ++i) {
    const OpSpec& op = operations()[i];
    const nlohmann::json& described = all[i];
    EXPECT_EQ(described["name"], op.name);
    EXPECT_EQ(described["role"], to_string(op.role));
    EXPECT_EQ(described["python_class"], op.python_class);
    EXPECT_EQ(described["backend"], to_string(op.backend));
    EXPECT_NE(op.backend, OpBackend::kUnset) << op.name << " declares no backend";
    ASSERT_EQ(described["params"].size(), op.params.size());
    for (size_t k = 0; k < op.params.size(); ++k) {
      const ParamSpec& p = op.params[k];
      const nlohmann::json& d = described["params"][k];
      EXPECT_EQ(d["name"], p.name);
      EXPECT_EQ(d["type"], to_string(p.type));
      EXPECT_EQ(d["min"].is_null(), !p.min) << op.name << "." << p.name;
      if (p.min) {
        EXPECT_EQ(d["min"].get<double>(), *p.min);
      }
      if (p.max) {
        EXPECT_EQ(d["max"].get<double>(), *p.max);
      }
      EXPECT_EQ(d["min_open"], p.min_open);
      // The default read back from the JSON is a valid call, equal to the spec's.
      const nlohmann::json value = d["default"];
      ParamValue given;
      if (value.is_boolean())
        given = value.get<bool>();
      else if (value.is_number_integer())
        given = value.get<int64_t>();
      else if (value.is_number())
        given = value.get<double>();
      else if (value.is_string())
        given = value.get<std::string>();
      else
        given = value.get<std::vector<double>>();
      EXPECT_EQ(d["choices"].get<std::vector<std::string>>(), p.choices);
      EXPECT_EQ(make_op_call(op.name, {{p.name, given}}).value().params.values()[k].second,
                p.default_value)
          << op.name << "." << p.name;
    }
  }
  const OpCall call = parse_op_call("color_jitter:brightness=0.5").value();
  EXPECT_EQ(nlohmann::json::parse(params_json(call)), (nlohmann::json{{"brightness", 0.5},
                                                                      {"contrast", 0.0},
                                                                      {"saturation", 0.0},
                                                                      {"hue", 0.0},
                                                                      {"backend", "tensor"}}));
}

}  // namespace
}  // namespace stoker
