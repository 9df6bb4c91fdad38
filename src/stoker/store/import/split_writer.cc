#include "stoker/store/import/split_writer.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace stoker {

Result<std::unique_ptr<SplitWriter>> SplitWriter::create(const std::string& out,
                                                         const std::vector<std::string>& dirs,
                                                         const std::vector<std::string>& sources,
                                                         const Schema& schema,
                                                         DatasetWriterOptions options) {
  std::error_code ec;
  std::unique_ptr<SplitWriter> writer(new SplitWriter(out, !fs::exists(out, ec)));
  for (size_t i = 0; i < dirs.size(); ++i) {
    options.source = sources[i];
    STOKER_ASSIGN_OR_RETURN(auto split, DatasetWriter::create(dirs[i], schema, options));
    writer->writers_.push_back(std::move(split));
    writer->dirs_.push_back(dirs[i]);
  }
  return writer;
}

SplitWriter::~SplitWriter() {
  if (finished_) return;
  writers_.clear();  // each removes its staging directory
  std::error_code ec;
  if (made_out_) fs::remove(out_, ec);  // only if empty
}

Status SplitWriter::finish() {
  for (size_t i = 0; i < writers_.size(); ++i) {
    Status status = writers_[i]->finish();
    if (!status.is_ok()) {
      std::error_code ec;
      for (size_t done = 0; done < i; ++done) fs::remove_all(dirs_[done], ec);
      return status;
    }
  }
  finished_ = true;
  return Status::ok();
}

}  // namespace stoker
