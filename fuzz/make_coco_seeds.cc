// Writes the COCO fuzz target's seed corpus into a directory: small instances files with
// polygons, plain counts, compact strings, crowds and a test split's image info.
#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: coco_json_fuzz_seeds DIR\n";
    return 2;
  }
  const char* const files[] = {
      R"({"images": [{"id": 1, "file_name": "a.jpg", "width": 16, "height": 12}],
          "categories": [{"id": 1, "name": "cat"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 2, 8, 6],
                           "area": 30.5, "iscrowd": 0,
                           "segmentation": [[1, 2, 9, 2, 9, 8, 1, 8], [3, 3, 5, 3, 4, 6]]}]})",
      R"({"images": [{"id": 4, "file_name": "d/b.png", "width": 5, "height": 4},
                     {"id": 2, "file_name": "c.jpg", "width": 3, "height": 3}],
          "categories": [{"id": 7, "name": "dog"}],
          "annotations": [{"id": 3, "image_id": 4, "category_id": 7, "bbox": [0, 0, 5, 4],
                           "iscrowd": 1, "segmentation": {"counts": [2, 6, 12], "size": [4, 5]}},
                          {"id": 5, "image_id": 2, "category_id": 7, "bbox": [0, 0, 3, 3],
                           "segmentation": {"counts": "36", "size": [3, 3]}}]})",
      R"({"images": [{"id": 1, "file_name": "t.jpg", "width": 640, "height": 480}],
          "categories": [{"id": 1, "name": "person"}]})",
  };
  int k = 0;
  for (const char* file : files)
    std::ofstream(std::string(argv[1]) + "/" + std::to_string(k++)) << file;
  return 0;
}
