// Built against the installed package by tests/install_check.cmake: writes a dataset of ten
// int64 labels (i * i) into DIR/labels with the public API, opens it, checks every record and
// prints what it read; then loads it in batches of 4 with two workers and prints each batch's
// sum of labels.
#include <stoker/pipeline/loader_core.h>
#include <stoker/store/dataset.h>
#include <stoker/store/dataset_writer.h>
#include <stoker/store/record_encoder.h>
#include <stoker/store/schema.h>
#include <stoker/util/status.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer DIR\n");
    return 2;
  }
  try {
    const std::string dir = std::string(argv[1]) + "/labels";
    const stoker::Schema schema =
        stoker::Schema::create({{"label", stoker::DType::kInt64, {}}}).value_or_throw();
    auto writer = stoker::DatasetWriter::create(dir, schema).value_or_throw();
    stoker::RecordEncoder encoder(schema);
    for (int64_t i = 0; i < 10; ++i) {
      const int64_t label = i * i;
      stoker::throw_if_error(encoder.set_fixed(0, &label, sizeof label));
      const std::vector<uint8_t>& record = encoder.encode();
      stoker::throw_if_error(writer->append(record.data(), record.size()));
    }
    stoker::throw_if_error(writer->finish());

    auto dataset = stoker::Dataset::open(dir).value_or_throw();
    std::printf("%llu records, labels", static_cast<unsigned long long>(dataset->size()));
    for (uint64_t i = 0; i < dataset->size(); ++i) {
      stoker::throw_if_error(dataset->verify_record(i));
      int64_t label = 0;
      std::memcpy(&label, dataset->fixed_field(i, 0), sizeof label);
      std::printf(" %lld", static_cast<long long>(label));
    }

    stoker::LoaderOptions options;
    options.batch_size = 4;
    options.workers = 2;
    options.shuffle = false;
    stoker::LoaderCore loader(std::move(dataset), options);
    stoker::LoaderCore::Epoch epoch = loader.epoch(0);
    stoker::HostBatch batch;
    std::printf(", batch sums");
    while (epoch.next(batch)) {
      const stoker::HostField& labels = batch["label"];
      int64_t sum = 0;
      for (int64_t i = 0; i < batch.size; ++i) sum += static_cast<const int64_t*>(labels.data)[i];
      std::printf(" %lld", static_cast<long long>(sum));
    }
    std::printf("\n");
  } catch (const stoker::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
