#include "stoker/train/trainer.h"

#include "stoker/train/training_run.h"

namespace stoker {

Trainer::Trainer(TrainerOptions options)
    : run_(std::make_unique<TrainingRun>(std::move(options))) {}

Trainer::~Trainer() = default;

TrainResult Trainer::run() { return run_->run(); }

Model& Trainer::model() { return *run_->setup().model; }

const ModelSpec& Trainer::spec() const { return run_->setup().spec; }

const c10::Device& Trainer::device() const { return run_->setup().device; }

int64_t Trainer::batches_per_epoch() const { return run_->setup().loader->batches_per_epoch(); }

}  // namespace stoker
