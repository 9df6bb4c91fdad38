#include "stoker/store/import/split_writer.h"

#include <filesystem>

#include "stoker/util/atomic_file.h"

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

Status SplitWriter::finish(const std::vector<OutputFile>& files) {
  Status status;
  size_t placed = 0;  // splits in place
  for (; placed < writers_.size(); ++placed) {
    status = writers_[placed]->finish();
    if (!status.is_ok()) break;
  }
  size_t written = 0;  // files written
  while (status.is_ok() && written < files.size()) {
    status = write_file_atomically(out_ + "/" + files[written].name, files[written].contents);
    if (status.is_ok()) ++written;
  }
  if (status.is_ok()) {
    finished_ = true;
    return status;
  }
  std::error_code ec;
  for (size_t i = 0; i < written; ++i) fs::remove(out_ + "/" + files[i].name, ec);
  for (size_t i = 0; i < placed; ++i) fs::remove_all(dirs_[i], ec);
  return status;
}

}  // namespace stoker
