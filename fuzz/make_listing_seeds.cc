// Writes the listing fuzz target's seed corpus into a directory: saved listings of small image
// folders (classes, samples, ignored files, a bad entry), as image_folder_listing_cache.h saves
// them for the root "root".
#include <fstream>
#include <iostream>
#include <string>

#include "stoker/store/import/image_folder_listing_cache.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: listing_fuzz_seeds DIR\n";
    return 2;
  }
  using namespace stoker;
  ImageFolderListing small;
  small.classes = {"cat", "dog"};
  small.samples = {{"root/cat/1.jpg", 0}, {"root/cat/2.png", 0}, {"root/dog/a.jpeg", 1}};
  ImageFolderListing odd = small;
  odd.ignored_files = 3;
  odd.bad = {{"root/dog/loop", "a symbolic link loop"}};
  odd.classes.push_back("\xc3\xa9t\xc3\xa9");
  odd.samples.push_back({"root/\xc3\xa9t\xc3\xa9/x.jpg", 2});
  int k = 0;
  for (const ImageFolderListing* listing : {&small, &odd})
    std::ofstream(std::string(argv[1]) + "/" + std::to_string(k++), std::ios::binary)
        << encode_listing("root", *listing);
  return 0;
}
