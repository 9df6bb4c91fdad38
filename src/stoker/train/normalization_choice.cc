#include "stoker/train/normalization_choice.h"

#include <fmt/format.h>

#include "stoker/pipeline/image_transforms.h"
#include "stoker/util/enum_names.h"

namespace stoker {
namespace {

// The values in the start line: "0.2860" or "0.4850,0.4560,0.4060".
std::string values_text(const std::vector<float>& values) {
  std::string text;
  for (float v : values) text += fmt::format("{}{:.4f}", text.empty() ? "" : ",", v);
  return text;
}

// Where a value comes from, in the start line; `option` names the option.
std::string origin(NormalizationSource source, const char* option, bool encoded) {
  switch (source) {
    case NormalizationSource::kOption:
      return option;
    case NormalizationSource::kData:
      return "the data's manifest";
    case NormalizationSource::kDefault:
      break;
  }
  return encoded ? "ImageNet's defaults" : "Fashion-MNIST's defaults";
}

// `given` if not empty, else the data's values if it has statistics, else `fallback`.
std::vector<float> choose(const std::vector<float>& given, const std::vector<double>* data,
                          const std::vector<float>& fallback, NormalizationSource& from) {
  if (!given.empty()) {
    from = NormalizationSource::kOption;
    return given;
  }
  if (data) {
    from = NormalizationSource::kData;
    return std::vector<float>(data->begin(), data->end());
  }
  from = NormalizationSource::kDefault;
  return fallback;
}

}  // namespace

const char* to_string(NormalizationSource source) {
  static constexpr auto kNames =
      enum_names<NormalizationSource>({{NormalizationSource::kOption, "option"},
                                       {NormalizationSource::kData, "data"},
                                       {NormalizationSource::kDefault, "default"}});
  return kNames.name(source);
}

NormalizationChoice choose_normalization(const Manifest& train, const std::string& dir,
                                         bool encoded, const std::vector<float>& mean,
                                         const std::vector<float>& std) {
  const auto stats = train.statistics.find("image");
  const FieldStatistics* data = stats == train.statistics.end() ? nullptr : &stats->second;
  NormalizationChoice c;
  c.mean = choose(mean, data ? &data->mean : nullptr, encoded ? kImageNetMean : kFashionMnistMean,
                  c.mean_from);
  c.std = choose(std, data ? &data->std : nullptr, encoded ? kImageNetStd : kFashionMnistStd,
                 c.std_from);
  const std::string mean_origin = origin(c.mean_from, "--mean", encoded);
  const std::string std_origin = origin(c.std_from, "--std", encoded);
  c.phrase =
      c.mean_from == c.std_from
          ? fmt::format("mean {} std {} from {}", values_text(c.mean), values_text(c.std),
                        c.mean_from == NormalizationSource::kOption ? "--mean/--std" : mean_origin)
          : fmt::format("mean {} from {}, std {} from {}", values_text(c.mean), mean_origin,
                        values_text(c.std), std_origin);
  const bool default_mean = c.mean_from == NormalizationSource::kDefault;
  const bool default_std = c.std_from == NormalizationSource::kDefault;
  if (default_mean || default_std) {
    c.warning = fmt::format(
        "warning: {} has no normalisation statistics in its manifest (converted by an older "
        "stoker, or its images are constant): normalising with {}'s {}; convert it again with "
        "this stoker to compute them, or pass --mean/--std",
        dir, encoded ? "ImageNet" : "Fashion-MNIST",
        default_mean && default_std ? "mean/std"
        : default_mean              ? "mean"
                                    : "std");
  }
  return c;
}

}  // namespace stoker
