#pragma once
// Test helper: TorchScript files (and files that only look like them) written by Debian's
// the build's Python (STOKER_PYTHON) with torch, for models that fail in each way a user's model
// can. All take samples of [1, 4, 4] (testing/classification.h's rows dataset) and have 4 classes.

#include <cstdlib>
#include <fstream>
#include <string>

namespace stoker::testing {

inline constexpr const char* kScriptModelsPy = R"(
import sys, torch, torch.nn as nn
out = sys.argv[1]
torch.manual_seed(0)

class Good(nn.Module):
    def __init__(s):
        super().__init__(); s.fc = nn.Linear(16, 4)
    def forward(s, x):
        return s.fc(torch.flatten(x, 1))

class Conv3(nn.Module):  # expects RGB
    def __init__(s):
        super().__init__(); s.conv1 = nn.Conv2d(3, 8, 3, padding=1); s.fc = nn.Linear(8, 4)
    def forward(s, x):
        return s.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(s.conv1(x), 1), 1))

class NoParams(nn.Module):
    def forward(s, x):
        return torch.flatten(x, 1)[:, :4]

class IntInTraining(Good):  # fine in evaluation mode, integer logits in training
    def forward(s, x):
        y = s.fc(torch.flatten(x, 1))
        if s.training:
            return y.long()
        return y

class RowsInTraining(Good):  # one row of logits whatever the batch, in training
    def forward(s, x):
        y = s.fc(torch.flatten(x, 1))
        if s.training:
            return y[:1]
        return y

class Raises(Good):
    def __init__(s):
        super().__init__(); s.calls = 0
    def forward(s, x):
        s.calls += 1
        if s.calls > 3:
            raise RuntimeError("boom after three calls")
        return s.fc(torch.flatten(x, 1))

class Tuple(Good):  # (logits, features), as many detection-style models return
    def forward(s, x):
        f = torch.flatten(x, 1)
        return s.fc(f), f

for name, cls in [("good", Good), ("conv3", Conv3), ("no_params", NoParams),
                  ("int_in_training", IntInTraining), ("rows_in_training", RowsInTraining),
                  ("raises", Raises), ("tuple", Tuple)]:
    torch.jit.script(cls()).save(f"{out}/{name}.pt")
torch.save(Good().state_dict(), f"{out}/state_dict.pt")
torch.save(Good(), f"{out}/pickled.pt")
torch.save(Good().state_dict(), f"{out}/legacy.pt", _use_new_zipfile_serialization=False)
)";

// Writes the models above into `dir` as NAME.pt. False if Python with torch is not available
// or the script fails.
inline bool write_script_models(const std::string& dir) {
  if (std::system(STOKER_PYTHON " -c 'import torch' >/dev/null 2>&1") != 0) return false;
  const std::string script = dir + "/script_models.py";
  std::ofstream(script) << kScriptModelsPy;
  return std::system((STOKER_PYTHON " " + script + " " + dir).c_str()) == 0;
}

}  // namespace stoker::testing
