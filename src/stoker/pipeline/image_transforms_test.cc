#include "stoker/pipeline/image_transforms.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "stoker/image/decode.h"
#include "stoker/image/resample.h"
#include "stoker/pipeline/loader_core.h"
#include "stoker/testing/records.h"
#include "stoker/testing/temp_dir.h"
#include "stoker/testing/test_images.h"

namespace stoker {
namespace {

using image::testing::encode_jpeg;
using image::testing::encode_png;
using image::testing::JpegSpec;
using image::testing::PngSpec;

// Records {image: bytes, label, height, width} (the last two only `with_size`), image i being
// images[i].
Schema image_schema(bool with_size) {
  std::vector<Field> fields = {{"image", DType::kBytes, {}}, {"label", DType::kInt64, {}}};
  if (with_size) {
    fields.push_back({"height", DType::kInt64, {}});
    fields.push_back({"width", DType::kInt64, {}});
  }
  return Schema::create(fields).value_or_throw();
}

struct Encoded {
  std::vector<uint8_t> bytes;
  int64_t width;
  int64_t height;
};

std::shared_ptr<const Dataset> write_images(const std::string& dir,
                                            const std::vector<Encoded>& images,
                                            bool with_size = true) {
  const Schema schema = image_schema(with_size);
  RecordEncoder encoder(schema);
  std::vector<std::vector<uint8_t>> records;
  for (size_t i = 0; i < images.size(); ++i) {
    const int64_t label = static_cast<int64_t>(i % 3);
    throw_if_error(encoder.set_bytes(0, images[i].bytes.data(), images[i].bytes.size()));
    throw_if_error(encoder.set_fixed(1, &label, 8));
    if (with_size) {
      throw_if_error(encoder.set_fixed(2, &images[i].height, 8));
      throw_if_error(encoder.set_fixed(3, &images[i].width, 8));
    }
    records.push_back(encoder.encode());
  }
  testing::write_dataset(dir, schema, records, 64 << 10);
  return Dataset::open(dir).value_or_throw();
}

// A mix of what an ImageFolder holds: JPEGs of several sizes and subsamplings, progressive,
// grayscale, CMYK, and PNGs.
std::vector<Encoded> mixed_images() {
  std::vector<Encoded> out;
  const int sizes[][2] = {{120, 90}, {97, 131}, {64, 64}, {300, 200}, {33, 47}, {250, 250}};
  for (int i = 0; i < 18; ++i) {
    const int w = sizes[i % 6][0], h = sizes[i % 6][1];
    if (i % 6 == 4) {
      PngSpec png;
      png.width = w;
      png.height = h;
      png.color_type = i % 4 == 0 ? 6 : 2;
      out.push_back({encode_png(png), w, h});
      continue;
    }
    JpegSpec jpeg;
    jpeg.width = w;
    jpeg.height = h;
    jpeg.components = i == 5 ? 1 : (i == 11 ? 4 : 3);
    jpeg.progressive = i % 5 == 1;
    jpeg.h_sampling = jpeg.v_sampling = i % 2 ? 1 : 2;
    jpeg.restart_rows = i % 3 == 0 ? 1 : 0;
    out.push_back({encode_jpeg(jpeg), w, h});
  }
  for (const Encoded& e : out) EXPECT_FALSE(e.bytes.empty());
  return out;
}

// Every sample of `dataset` through `transform`, epoch `epoch`, seed 3, back to back.
std::vector<uint8_t> apply_all(const Dataset& dataset, const Transform& transform,
                               int64_t epoch = 0) {
  size_t bytes = dtype_size(transform.dtype());
  for (int64_t d : transform.sample_shape()) bytes *= static_cast<size_t>(d);
  std::vector<uint8_t> out(bytes * dataset.size());
  for (uint64_t i = 0; i < dataset.size(); ++i) {
    SampleInput input;
    input.record = dataset.record(i);
    input.schema = &dataset.schema();
    input.index = static_cast<int64_t>(i);
    input.epoch = epoch;
    input.seed = 3;
    const Status s = transform.apply(input, out.data() + i * bytes);
    EXPECT_TRUE(s.is_ok()) << "record " << i << ": " << s.message();
  }
  return out;
}

ImageOutput output(int size, bool uint8, bool dct = false, bool crop_decode = true) {
  ImageOutput o;
  o.size = size;
  o.uint8 = uint8;
  o.dct_scaling = dct;
  o.crop_decode = crop_decode;
  return o;
}

std::shared_ptr<const Transform> train(const Dataset& d, const ImageOutput& o,
                                       RandomCropOptions options = {}) {
  return random_resized_crop_transform(d.schema(), "image", o, options).value_or_throw();
}

std::shared_ptr<const Transform> eval(const Dataset& d, const ImageOutput& o, int resize = 0) {
  return center_crop_transform(d.schema(), "image", o, resize).value_or_throw();
}

class ImageTransformsTest : public ::testing::Test {
 protected:
  void SetUp() override { dataset_ = write_images(dir_ / "ds", mixed_images()); }
  testing::TempDir dir_;
  std::shared_ptr<const Dataset> dataset_;
};

TEST_F(ImageTransformsTest, ShapesAndTypes) {
  const auto t = train(*dataset_, output(32, false));
  EXPECT_EQ(t->dtype(), DType::kFloat32);
  EXPECT_EQ(t->sample_shape(), (std::vector<int64_t>{3, 32, 32}));
  const auto e = eval(*dataset_, output(24, true));
  EXPECT_EQ(e->dtype(), DType::kUint8);
  EXPECT_EQ(e->sample_shape(), (std::vector<int64_t>{3, 24, 24}));
}

// Decoding only the crop (and for evaluation the filter's reach around it) gives the very
// pixels a whole-image decode gives: for training crops and for Resize + CenterCrop.
TEST_F(ImageTransformsTest, CropDecodeEqualsWholeDecode) {
  for (bool uint8 : {true, false}) {
    EXPECT_EQ(apply_all(*dataset_, *train(*dataset_, output(40, uint8))),
              apply_all(*dataset_, *train(*dataset_, output(40, uint8, false, false))));
    EXPECT_EQ(apply_all(*dataset_, *eval(*dataset_, output(40, uint8))),
              apply_all(*dataset_, *eval(*dataset_, output(40, uint8, false, false))));
  }
}

// Non-square outputs (size x width) and the bicubic filter, whose reach is twice the bilinear's:
// decoding only what the sample needs still gives a whole-image decode's pixels.
TEST_F(ImageTransformsTest, NonSquareAndBicubicSamplesAreTheWholeDecodes) {
  for (ImageInterpolation filter : {ImageInterpolation::kBilinear, ImageInterpolation::kBicubic}) {
    ImageOutput o = output(24, true);
    o.width = 37;
    o.interpolation = filter;
    ImageOutput whole = o;
    whole.crop_decode = false;
    EXPECT_EQ(train(*dataset_, o)->sample_shape(), (std::vector<int64_t>{3, 24, 37}));
    EXPECT_EQ(eval(*dataset_, o)->sample_shape(), (std::vector<int64_t>{3, 24, 37}));
    EXPECT_EQ(apply_all(*dataset_, *train(*dataset_, o)),
              apply_all(*dataset_, *train(*dataset_, whole)));
    EXPECT_EQ(apply_all(*dataset_, *eval(*dataset_, o)),
              apply_all(*dataset_, *eval(*dataset_, whole)));
  }
  ImageOutput random = output(24, true);
  random.interpolation = ImageInterpolation::kRandom;
  EXPECT_EQ(center_crop_transform(dataset_->schema(), "image", random).status().message(),
            "field 'image': the evaluation resize is bilinear or bicubic, not random");
  // A resize out of bounds is refused in one line.
  EXPECT_EQ(center_crop_transform(dataset_->schema(), "image", output(24, true), 32769)
                .status()
                .message(),
            "field 'image': resize 32769 is outside [1, 32768]");
}

// The training sample of record i is its RandomResizedCrop drawn from the sample's own stream,
// resampled, flipped when the next draw says so: recomputed here from the parts.
TEST_F(ImageTransformsTest, TrainingSampleIsTheSampledCropResampled) {
  const auto t = train(*dataset_, output(28, true));
  const std::vector<uint8_t> got = apply_all(*dataset_, *t, /*epoch=*/2);
  const size_t bytes = 3 * 28 * 28;
  image::DecodeBuffer buffer;
  image::Resampler resampler;
  int flipped = 0;
  for (uint64_t i = 0; i < dataset_->size(); ++i) {
    SampleInput input;
    input.index = static_cast<int64_t>(i);
    input.epoch = 2;
    input.seed = 3;
    CounterRng rng = input.rng();
    const ByteSpan bytes_in = variable_field(dataset_->schema(), dataset_->record(i), 0).value();
    image::DecodeRequest whole;
    const image::RgbView all = image::decode_rgb(bytes_in, whole, buffer).value().pixels;
    const image::CropRect crop = image::random_resized_crop(all.width, all.height, {}, rng).value();
    image::ResampleOutput out;
    out.width = out.height = 28;
    out.type = image::ResampleOutput::Type::kUint8;
    out.flip_horizontal = rng.next_double() < 0.5;
    flipped += out.flip_horizontal;
    const image::RgbView part = {all.row(crop.y) + 3 * crop.x, crop.width, crop.height, all.stride};
    std::vector<uint8_t> want(bytes);
    ASSERT_TRUE(
        resampler.resample(part, {0, 0, double(crop.width), double(crop.height)}, out, want.data())
            .is_ok());
    EXPECT_EQ(std::memcmp(got.data() + i * bytes, want.data(), bytes), 0) << "record " << i;
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, static_cast<int>(dataset_->size()));
}

// Samples are a function of (seed, epoch, index): the same again, another epoch differs.
TEST_F(ImageTransformsTest, SamplesAreAFunctionOfSeedEpochAndIndex) {
  const auto t = train(*dataset_, output(20, true));
  EXPECT_EQ(apply_all(*dataset_, *t, 1), apply_all(*dataset_, *t, 1));
  EXPECT_NE(apply_all(*dataset_, *t, 1), apply_all(*dataset_, *t, 2));
  const auto e = eval(*dataset_, output(20, true));
  EXPECT_EQ(apply_all(*dataset_, *e, 1), apply_all(*dataset_, *e, 2));  // no randomness
}

TEST_F(ImageTransformsTest, FlipProbabilityOneMirrorsProbabilityZero) {
  RandomCropOptions never, always;
  never.flip_probability = 0;
  always.flip_probability = 1;
  const int s = 16;
  const auto a = apply_all(*dataset_, *train(*dataset_, output(s, true), never));
  const auto b = apply_all(*dataset_, *train(*dataset_, output(s, true), always));
  for (size_t row = 0; row < a.size() / s; ++row) {
    for (int x = 0; x < s; ++x) ASSERT_EQ(a[row * s + x], b[row * s + s - 1 - x]) << row;
  }
}

// float32 output is the uint8 output's arithmetic normalised, up to the resampler's rounding:
// within one grey level.
TEST_F(ImageTransformsTest, FloatOutputIsTheNormalisedResize) {
  const auto u = apply_all(*dataset_, *train(*dataset_, output(24, true)));
  const auto f = apply_all(*dataset_, *train(*dataset_, output(24, false)));
  const float* values = reinterpret_cast<const float*>(f.data());
  const size_t plane = 24 * 24;
  for (size_t k = 0; k < u.size(); ++k) {
    const int c = static_cast<int>((k / plane) % 3);
    const double x = values[k] * kImageNetStd[c] + kImageNetMean[c];
    ASSERT_NEAR(x * 255, u[k], 1.0) << k;
  }
}

// Without stored width/height the transform reads the image's header: the same samples.
TEST_F(ImageTransformsTest, SizeFromTheHeaderWhenNotStored) {
  const auto bare = write_images(dir_ / "bare", mixed_images(), /*with_size=*/false);
  EXPECT_EQ(apply_all(*dataset_, *train(*dataset_, output(20, true))),
            apply_all(*bare, *train(*bare, output(20, true))));
}

// A reduced DCT scale changes the pixels only a little: mean difference under 2 grey levels
// on photo-like fixtures (it replaces part of the antialiasing filter by the DCT's own).
TEST_F(ImageTransformsTest, DctScalingStaysCloseToTheFullScaleDecode) {
  std::vector<Encoded> big;
  for (int i = 0; i < 4; ++i) {
    JpegSpec jpeg;
    jpeg.width = 400 + 37 * i;
    jpeg.height = 300 + 11 * i;
    big.push_back({encode_jpeg(jpeg), jpeg.width, jpeg.height});
  }
  const auto d = write_images(dir_ / "big", big);
  RandomCropOptions large;
  large.crop.scale_min = 0.9;
  const auto exact = apply_all(*d, *train(*d, output(64, true, false), large));
  const auto scaled = apply_all(*d, *train(*d, output(64, true, true), large));
  double sum = 0;
  for (size_t k = 0; k < exact.size(); ++k) sum += std::abs(int(exact[k]) - int(scaled[k]));
  EXPECT_NE(exact, scaled);  // it did scale (crops of >= 90% of 400 px cover 64 px at 1/4)
  EXPECT_LT(sum / exact.size(), 2.0);
}

TEST_F(ImageTransformsTest, BadOptionsAreRefusedNamingTheField) {
  const Schema& schema = dataset_->schema();
  auto message = [](const Result<std::shared_ptr<const Transform>>& r) {
    return r.is_ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_NE(
      message(random_resized_crop_transform(schema, "label", output(8, true))).find("'label'"),
      std::string::npos);
  EXPECT_NE(message(random_resized_crop_transform(schema, "nope", output(8, true))).find("'nope'"),
            std::string::npos);
  EXPECT_FALSE(random_resized_crop_transform(schema, "image", output(0, true)).is_ok());
  RandomCropOptions bad;
  bad.flip_probability = 1.5;
  EXPECT_FALSE(random_resized_crop_transform(schema, "image", output(8, true), bad).is_ok());
  bad = {};
  bad.crop.scale_min = 0;
  EXPECT_FALSE(random_resized_crop_transform(schema, "image", output(8, true), bad).is_ok());
  ImageOutput zero_std = output(8, false);
  zero_std.std = {0.2f, 0.0f, 0.2f};
  EXPECT_FALSE(random_resized_crop_transform(schema, "image", zero_std).is_ok());
  ImageOutput two_means = output(8, false);
  two_means.mean = {0.2f, 0.3f};
  EXPECT_FALSE(random_resized_crop_transform(schema, "image", two_means).is_ok());
  EXPECT_FALSE(center_crop_transform(schema, "image", output(8, true), -1).is_ok());
  // A resize below the crop is torchvision's zero-padded CenterCrop (test_loader_transforms.py).
  EXPECT_TRUE(center_crop_transform(schema, "image", output(8, true), 7).is_ok());
  // Resize alone: a variable transform of capacity [3, size, size]; its own bounds.
  const auto resized = resize_transform(schema, "image", output(64, true), 20, 30);
  ASSERT_TRUE(resized.is_ok());
  EXPECT_NE(resized.value()->as_variable(), nullptr);
  EXPECT_EQ(resized.value()->sample_shape(), (std::vector<int64_t>{3, 64, 64}));
  EXPECT_EQ(resize_transform(schema, "image", output(64, true), 0).status().message(),
            "field 'image': resize 0 is outside [1, 32768]");
  EXPECT_EQ(resize_transform(schema, "image", output(64, true), 20, 20).status().message(),
            "field 'image': max_size 20 is outside [21, 32768] (above resize)");
}

// A corrupt image is a per-sample error naming the field; the loader's policies apply: raise
// names dataset and record, skip drops it and counts it — with any number of workers, and the
// surviving samples are the same.
TEST_F(ImageTransformsTest, CorruptImagesGoThroughTheErrorPolicy) {
  std::vector<Encoded> images = mixed_images();
  images[5].bytes.resize(images[5].bytes.size() / 2);  // truncated JPEG
  images[9].bytes.assign(200, 0x5a);                   // not an image
  const auto d = write_images(dir_ / "bad", images);
  std::vector<std::vector<uint8_t>> delivered;
  for (int workers : {0, 1, 3}) {
    LoaderOptions o;
    o.batch_size = 4;
    o.workers = workers;
    o.seed = 3;
    o.fields = {{"image", train(*d, output(16, true))}, {"label"}};
    {
      LoaderCore loader(d, o);
      LoaderCore::Epoch epoch = loader.epoch(0);
      HostBatch b;
      try {
        while (epoch.next(b)) {
        }
        ADD_FAILURE() << "no error raised";
      } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("field 'image'"), std::string::npos) << m;
        EXPECT_NE(m.find("dataset record"), std::string::npos) << m;
      }
    }
    o.on_error = ErrorPolicy::kSkip;
    LoaderCore loader(d, o);
    LoaderCore::Epoch epoch = loader.epoch(0);
    HostBatch b;
    int64_t samples = 0, skipped = 0;
    std::vector<uint8_t> all;
    while (epoch.next(b)) {
      samples += b.size;
      skipped += b.skipped;
      const uint8_t* p = static_cast<const uint8_t*>(b["image"].data);
      all.insert(all.end(), p, p + b.size * 3 * 16 * 16);
    }
    EXPECT_EQ(samples, 16);
    EXPECT_EQ(skipped, 2);
    delivered.push_back(all);
  }
  EXPECT_EQ(delivered[0], delivered[1]);
  EXPECT_EQ(delivered[0], delivered[2]);
}

// Stored width/height that do not match the image: an error, never a read outside the pixels.
TEST_F(ImageTransformsTest, LyingStoredSizeIsAnError) {
  std::vector<Encoded> images = mixed_images();
  images[2].width = 5000;
  images[3].height = 0;
  const auto d = write_images(dir_ / "lying", images);
  for (bool crop_decode : {true, false}) {
    const auto t = train(*d, output(16, true, false, crop_decode));
    std::vector<uint8_t> slot(3 * 16 * 16);
    for (uint64_t i : {2, 3}) {
      SampleInput input;
      input.record = d->record(i);
      input.schema = &d->schema();
      input.index = static_cast<int64_t>(i);
      EXPECT_FALSE(t->apply(input, slot.data()).is_ok()) << i;
    }
  }
}

}  // namespace
}  // namespace stoker
