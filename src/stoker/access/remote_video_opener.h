#pragma once
// A remote video folder's videos read by ranges (issue 63): each record's video field holds a
// reference (video/video_reference.h: the folder's URL, the video's name, URL, size and ETag or
// other version, from the listing; nothing downloaded at open), and the folder's store is
// registered as the opener of its references, so that decode_clip reads a video's header and the
// GOPs its clips need by ranged GETs (video/video_reference.h's blocks), not the whole file. Each
// GET asks for the listed ETag (If-Match), or, where the listing gave none, checks the size the
// server gives (and asks the ETag its first GET gave of an open's later GETs): a video changed
// since the listing fails its read with one line naming its URL.
// Thread-safe (functions).

#include <string>
#include <vector>

#include "stoker/access/remote_files.h"
#include "stoker/util/status.h"

namespace stoker::remote {

// The references of `files`, the videos listed in the folder `location` (its redacted URL), the
// folder's store registered as their opener; a file the listing could not size is its error.
std::vector<Result<std::string>> remote_video_references(const std::string& location,
                                                         const std::vector<ListedFile>& files);

}  // namespace stoker::remote
