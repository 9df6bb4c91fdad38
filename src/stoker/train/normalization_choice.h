#pragma once
// Which per-channel mean and std a training run normalises its input with, (x / 255 - mean) /
// std, and where they come from: the values given (TrainerOptions::mean and std, `--mean` and
// `--std`), else the training data's own statistics, computed at import and stored in its
// manifest (store/channel_statistics.h). Data without them (converted by an older stoker)
// falls back to a default by kind, ImageNet's for encoded images and Fashion-MNIST's for stored
// pixels, with a warning that says so.

#include <string>
#include <vector>

#include "stoker/store/manifest.h"

namespace stoker {

// Fashion-MNIST's statistics (its training split): the default for stored pixels.
inline const std::vector<float> kFashionMnistMean = {0.2860f};
inline const std::vector<float> kFashionMnistStd = {0.3530f};

// Where a value comes from: kOption (given), kData (the manifest), kDefault.
enum class NormalizationSource { kOption, kData, kDefault };

// "option", "data" or "default" (the run log's words).
const char* to_string(NormalizationSource source);

// A run's normalisation. Plain value.
struct NormalizationChoice {
  std::vector<float> mean;
  std::vector<float> std;
  NormalizationSource mean_from = NormalizationSource::kData;
  NormalizationSource std_from = NormalizationSource::kData;
  // A short phrase for the start line, e.g. "mean 0.2860 std 0.3530 from the data's manifest".
  std::string phrase;
  // One line when a default is used because the data has no statistics, else "".
  std::string warning;
};

// For training data whose manifest is `train` (the dataset at `dir`) with its images in field
// "image" (`encoded`: a bytes field of JPEG or PNG images): `mean` and `std` where given
// (non-empty), the manifest's statistics of "image" for those not given, else the default.
NormalizationChoice choose_normalization(const Manifest& train, const std::string& dir,
                                         bool encoded, const std::vector<float>& mean,
                                         const std::vector<float>& std);

}  // namespace stoker
