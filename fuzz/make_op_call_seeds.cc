// Writes the operation-call fuzz target's seed corpus into a directory: each operation called
// with its defaults as the CLI writes them (to_text), one file each.
#include <fstream>
#include <iostream>

#include "stoker/pipeline/op_registry.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: op_call_fuzz_seeds DIR\n";
    return 2;
  }
  for (const stoker::OpSpec& op : stoker::operations())
    std::ofstream(std::string(argv[1]) + "/" + op.name)
        << stoker::to_text(stoker::make_op_call(op.name, {}).value_or_throw());
  return 0;
}
