#pragma once
// What WebDataset samples give besides their image (webdataset_source.h), decided when the
// source opens from its tars' indexes (the samples' members and each .npy member's header),
// without reading the tars:
//  - the label: the field `label` names, or where it is "" the samples' first field of `cls`,
//    `label`, `class` and `txt` that some sample holds (`cls` where none does), a decimal integer
//    as text; "none": no field (image-text pairs, whose `txt` is a caption);
//  - every other field every sample holds (of those the grouping accepts), named as the
//    samples name it (`json`, `txt`, `feat.npy`): a .npy member's field (its name ends in `npy`) is
//    an array of the dtype and trailing shape of its first member whose header is whole and of a
//    dtype stoker's format holds (npy_header.h), fixed where every such member has the same shape,
//    else variable-length in its leading dimension (named N_FIELD, its most rows kept); any other
//    field, or an npy field none of whose headers is read, is bytes, the member as it is.
// Left out: the image's fields (jpg, jpeg, png, webp); named with why, a field only some samples
// hold ("txt (in 3 of 10 samples)"), so that no sample is a bad record for lacking it (unless
// `required` names it: then a sample without it is one, its caption, say, read), and a
// field the schema refuses (a name the image layout has, or a shape it cannot hold). Functions;
// thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stoker/store/import/tar_index.h"
#include "stoker/store/import/webdataset_samples.h"
#include "stoker/store/record_encoder.h"
#include "stoker/store/schema.h"
#include "stoker/util/byte_span.h"
#include "stoker/util/status.h"

namespace stoker {

struct WebDatasetFields {
  std::string label;                  // the samples' field read as the label ("": none)
  std::vector<Field> fields;          // the others read, as the schema holds them, by name
  std::vector<uint64_t> max_rows;     // of each: a variable-length array's most rows, else 0
  std::vector<std::string> left_out;  // "FIELD (why)"
};

// The fields of the samples `samples[t]` of the tars `tars[t]`; `base` the schema's fields
// before them (the image layout's); `label` and `required` as above.
WebDatasetFields webdataset_fields(const std::vector<TarIndex>& tars,
                                   const std::vector<std::vector<WebDatasetSample>>& samples,
                                   const std::vector<Field>& base, const std::string& label = "",
                                   const std::vector<std::string>& required = {});

// The member of `sample` that is its image: the first of its jpg, jpeg, png and webp, or nullopt.
std::optional<size_t> image_member(const WebDatasetSample& sample);

// A field's value in one sample: a bytes field's bytes, or an array's data and rows (1 for a
// fixed one).
struct WebDatasetValue {
  ByteSpan data;
  uint64_t rows = 0;
};

// The value of `field` in a member whose bytes are `member`: kCorrupt saying why it is not one
// (a .npy array that is not whole, or of another dtype or shape than the field's).
Result<WebDatasetValue> webdataset_value(const Field& field, ByteSpan member);

// Sets field `index` of `encoder`, which is `field`, to `value`; an empty value (a bad record's)
// sets no bytes, no rows or a fixed array's zeros.
Status set_webdataset_value(RecordEncoder& encoder, int index, const Field& field,
                            const WebDatasetValue& value);

}  // namespace stoker
