#include "stoker/pipeline/loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "stoker/pipeline/device_feed.h"

namespace stoker {
namespace {

at::ScalarType scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return at::kByte;
    case DType::kInt64:
      return at::kLong;
    case DType::kFloat32:
      return at::kFloat;
    case DType::kBytes:
      break;
  }
  throw Error(invalid_argument("bytes fields have no tensor type"));
}

SamplerOptions sampler_options(const LoaderOptions& o) {
  SamplerOptions s;
  s.seed = o.seed;
  s.shuffle = o.shuffle;
  s.rank = o.rank;
  s.world_size = o.world_size;
  s.batch_size = o.batch_size;
  s.drop_last = o.drop_last;
  return s;
}

BatchLayout make_layout(const Dataset& dataset, const LoaderOptions& options) {
  if (options.fields.empty()) return BatchLayout::copy_all(dataset.schema());
  return BatchLayout::create(dataset.schema(), options.fields).value_or_throw();
}

LoaderOptions checked(LoaderOptions options, const Dataset& dataset) {
  if (options.prefetch < -1 || options.prefetch == 0)
    throw Error(invalid_argument("prefetch must be -1 (auto) or at least 1"));
  if (options.workers < -1) throw Error(invalid_argument("workers must be -1 (auto), 0 or more"));
  if (options.workers == -1) options.workers = auto_workers();
  if (dataset.size() == 0) throw Error(invalid_argument(dataset.dir() + ": the dataset is empty"));
  if (options.prefetch == -1) {
    const BatchLayout layout = make_layout(dataset, options);
    size_t sample_bytes = 0;
    for (const BatchField& f : layout.fields()) sample_bytes += f.sample_bytes;
    options.prefetch = auto_prefetch(sample_bytes * static_cast<size_t>(options.batch_size));
  }
  return options;
}

}  // namespace

int auto_workers() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1);
}

int auto_prefetch(size_t batch_bytes) {
  constexpr size_t kBudget = size_t{16} << 20;
  return static_cast<int>(std::clamp<size_t>(kBudget / std::max<size_t>(batch_bytes, 1), 4, 64));
}

const at::Tensor& Batch::operator[](const std::string& name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return tensors_[i];
  }
  throw Error(invalid_argument("the batch has no field '" + name + "'"));
}

std::map<std::string, at::Tensor> Batch::clone() const {
  std::map<std::string, at::Tensor> out;
  for (size_t i = 0; i < names_.size(); ++i) out[names_[i]] = tensors_[i].clone();
  return out;
}

Loader::Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options)
    : dataset_(std::move(dataset)),
      options_(checked(std::move(options), *dataset_)),
      layout_(make_layout(*dataset_, options_)),
      sampler_(static_cast<int64_t>(dataset_->size()), sampler_options(options_)),
      stats_(std::make_shared<PipelineStats>()),
      verified_(std::make_shared<VerifiedSet>(dataset_->size())),
      feed_(std::make_unique<DeviceFeed>(options_.device)) {
  pool_ = BufferPool::create(layout_, options_.batch_size,
                             static_cast<size_t>(options_.prefetch) + 2, feed_->host_allocator());
  state_.seed = options_.seed;
}

Loader::~Loader() = default;

int64_t Loader::batches_per_epoch() const { return sampler_.num_batches(); }

size_t Loader::buffer_bytes() const {
  size_t per_buffer = 0;
  for (const BatchField& f : layout_.fields()) per_buffer += f.sample_bytes;
  return pool_->allocations() * per_buffer * static_cast<size_t>(options_.batch_size);
}

void Loader::restore(const LoaderState& state) {
  if (state.seed != options_.seed)
    throw Error(
        invalid_argument(fmt::format("cannot restore a loader state of seed {} into a loader "
                                     "of seed {}",
                                     state.seed, options_.seed)));
  if (state.epoch < 0 || state.position < 0)
    throw Error(invalid_argument("a loader state has a negative epoch or position"));
  state_ = state;
}

EpochRange Loader::epoch(int64_t e) {
  const int64_t start = e == state_.epoch ? state_.position : 0;
  EngineOptions engine_options;
  engine_options.workers = options_.workers;
  engine_options.prefetch = options_.prefetch;
  engine_options.verify = options_.verify;
  engine_options.skip_errors = options_.on_error == ErrorPolicy::kSkip;
  auto engine = std::make_unique<BatchEngine>(dataset_, layout_, pool_, sampler_.plan(e, start),
                                              engine_options, stats_, verified_);
  return EpochRange(*this, std::move(engine));
}

void Loader::on_batch(const BatchBuffer& buffer, bool last) {
  if (last) {
    state_ = {options_.seed, buffer.epoch + 1, 0};
  } else {
    state_ = {options_.seed, buffer.epoch, buffer.position_after};
  }
}

EpochRange::EpochRange(Loader& loader, std::unique_ptr<BatchEngine> engine)
    : loader_(&loader), engine_(std::move(engine)) {}

EpochRange::EpochRange(EpochRange&&) noexcept = default;
EpochRange::~EpochRange() = default;

EpochRange::Iterator EpochRange::begin() {
  if (!started_) {
    started_ = true;
    advance();
  }
  return Iterator(this);
}

void EpochRange::advance() {
  current_ = Batch();
  std::shared_ptr<BatchBuffer> buffer = engine_->next();
  if (!buffer) {
    done_ = true;
    return;
  }
  throw_if_error(buffer->status);
  const BatchLayout& layout = loader_->layout();
  std::vector<at::Tensor> host;
  for (size_t f = 0; f < layout.fields().size(); ++f) {
    const BatchField& field = layout.fields()[f];
    std::vector<int64_t> shape = {buffer->size};
    shape.insert(shape.end(), field.sample_shape.begin(), field.sample_shape.end());
    host.push_back(at::from_blob(
        buffer->fields[f].get(), shape, [buffer](void*) {},
        at::TensorOptions(scalar_type(field.dtype))));
    current_.names_.push_back(field.name);
  }
  current_.tensors_ = loader_->feed_->to_device(std::move(host));
  current_.size_ = buffer->size;
  current_.epoch_ = buffer->epoch;
  current_.index_ = buffer->batch;
  current_.skipped_ = buffer->skipped;
  loader_->on_batch(*buffer, buffer->batch + 1 == engine_->plan().num_batches());
}

}  // namespace stoker
