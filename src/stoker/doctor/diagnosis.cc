#include "stoker/doctor/diagnosis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stoker {
namespace {

// Thresholds of classify(), as fractions of the loop's time and ratios of rates.
constexpr double kTransferShare = 0.25;
constexpr double kDataWaitShare = 0.20;
constexpr double kComputeBoundWait = 0.10;
constexpr double kLoaderTooSlow = 0.8;
constexpr double kLoaderHeadroom = 1.5;
// A predicted gain below this is noise on a shared machine, not an action.
constexpr double kWorthIt = 1.03;

double fraction(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

// Batches per second of the loop as measured.
double loop_rate(const StepSplit& loop) { return loop.per_second(loop.wall); }

// Batches per second the loop would reach if the loader never made it wait.
double rate_without_wait(const StepSplit& loop) { return loop.per_second(loop.wall - loop.data); }

std::string rate(double batches_per_second) {
  return fmt::format("{:.1f} batches/s", batches_per_second);
}

std::string percent(double f) { return fmt::format("{:.1f}%", 100 * f); }

// Actions on the loader: more workers while cores are left; cheaper samples when more workers
// cannot give the loop all it could take.
void loader_actions(const DoctorMeasurements& m, double now, std::vector<DoctorAction>& out) {
  const double unbound = rate_without_wait(m.loop);
  const bool cores_left = m.cuda || m.workers < m.cores;
  double with_workers = m.loader_rate;  // the loader's rate after the workers action
  if (cores_left && m.loader_rate > 0) {
    // Workers build whole pieces of batches in parallel: the loader's rate scales with them
    // until the cores run out. (Less a hair, so that a loader exactly as fast as needed does
    // not ask for one more; clamped before the cast, however slow the loader.)
    const double most = std::max(m.cores, m.workers + 1);
    const int workers =
        m.workers == 0
            ? 1
            : static_cast<int>(std::clamp(std::ceil(m.workers * unbound / m.loader_rate - 1e-9),
                                          static_cast<double>(m.workers + 1), most));
    const double loader = m.workers == 0 ? m.loader_rate : m.loader_rate * workers / m.workers;
    std::string why =
        fmt::format("the loader alone delivers {} with {} worker{}; the loop could take {}",
                    rate(m.loader_rate), m.workers, m.workers == 1 ? "" : "s", rate(unbound));
    with_workers = loader;
    if (!m.cuda && m.worker_seconds_per_batch > 0) {
      // On the CPU the workers and compute share the cores: a batch needs the workers' time
      // plus the training thread's time on each compute thread.
      const double training = fraction(m.loop.wall - m.loop.data, m.loop.batches);
      const double cores_allow =
          m.cores / (m.worker_seconds_per_batch + m.compute_threads * training);
      if (cores_allow < std::min(loader, unbound)) {
        why += fmt::format(
            "; {} worker{} would make {}, but the {} cores, shared with {} compute thread{}, "
            "allow {}",
            workers, workers == 1 ? "" : "s", rate(loader), m.cores, m.compute_threads,
            m.compute_threads == 1 ? "" : "s", rate(cores_allow));
      }
      with_workers = std::min(loader, cores_allow);
    }
    if (!m.tuned) why += "; or --workers auto to tune it while training";
    out.push_back({fmt::format("--workers {}", workers), why,
                   std::max(1.0, fraction(std::min(unbound, with_workers), now)), false});
  }
  const double bound = std::max(1.0, fraction(unbound, now));
  if (!m.tuned && m.loader_rate >= unbound && m.loop.data > 0) {
    // Fast enough on average, yet the loop waits: batches come in bursts, or the workers lose
    // the cores to compute at the wrong moments.
    out.push_back(
        {"--workers auto",
         fmt::format("the loader alone delivers {}, at least the {} the loop could take, yet the "
                     "loop waits: the batches come in bursts or the workers compete with compute "
                     "for the cores; tuning sets the workers and the prefetch depth to the loop",
                     rate(m.loader_rate), rate(unbound)),
         bound, true});
  }
  if (with_workers >= unbound * (2 - kWorthIt)) return;  // workers are enough
  const std::string per_sample =
      fmt::format("samples cost {:.0f} us of worker time each",
                  1e6 * m.worker_seconds_per_batch / std::max<int64_t>(1, m.batch_size));
  if (m.verify_always) {
    out.push_back({"--verify once",
                   per_sample + ", and every read checks its record's checksum; once checks each "
                                "record on its first read only",
                   bound, true});
  }
  if (m.encoded_images && !m.dct_scaling) {
    out.push_back({"--dct-scaling",
                   per_sample + "; large JPEG crops decode faster at a reduced DCT scale (the "
                                "fast mode: pixels no longer torchvision's exactly)",
                   bound, true});
  }
  if (m.encoded_images) {
    out.push_back(
        {"store smaller images: stoker convert imagefolder --max-side (about twice "
         "--image-size)",
         per_sample + ", mostly decoding, whose cost grows with the stored pixels", bound, true});
  }
}

// The synthetic cost (--sample-cost-us), if any: last, as it is not a change to a real run.
void synthetic_cost_action(const DoctorMeasurements& m, double now,
                           std::vector<DoctorAction>& out) {
  if (m.sample_cost_us <= 0 || m.worker_seconds_per_batch <= 0) return;
  const double synthetic =
      std::min(0.99, m.sample_cost_us * 1e-6 * m.batch_size / m.worker_seconds_per_batch);
  const double loader = m.loader_rate / (1 - synthetic);
  const double speedup = fraction(std::min(rate_without_wait(m.loop), loader), now);
  if (speedup < kWorthIt) return;
  out.push_back(
      {"leave out --sample-cost-us",
       fmt::format("the synthetic cost is {} of the workers' time per batch", percent(synthetic)),
       speedup, false});
}

// The input-making step on the training thread.
void transfer_actions(const DoctorMeasurements& m, double now, std::vector<DoctorAction>& out) {
  const double bound = std::max(1.0, m.loop.per_second(m.loop.wall - m.loop.h2d) / now);
  const std::string per_batch =
      fmt::format("making the input takes {:.2f} ms per batch", 1e3 * m.loop.per_batch(m.loop.h2d));
  if (m.cuda) {
    out.push_back(
        {"shrink what is copied to the device (a smaller --image-size; keep images uint8)",
         per_batch + "; the copy is from pinned memory on a side stream already", bound, true});
  } else if (m.compute_threads < m.cores) {
    out.push_back({fmt::format("--threads {}", m.cores),
                   per_batch + fmt::format(" (uint8 to float normalisation on {} thread{})",
                                           m.compute_threads, m.compute_threads == 1 ? "" : "s"),
                   bound, true});
  }
}

// Measured compute variants, weighted by compute's share of the loop (Amdahl).
void compute_actions(const DoctorMeasurements& m, std::vector<DoctorAction>& out) {
  const double share = fraction(m.loop.compute(), m.loop.wall);
  for (const ComputeProbe& probe : m.probes) {
    if (probe.speedup < kWorthIt) continue;
    const double speedup = 1 / ((1 - share) + share / probe.speedup);
    out.push_back({probe.change,
                   fmt::format("{}: compute alone ran {:.2f}x as many samples per second, and "
                               "compute is {} of the loop",
                               probe.what, probe.speedup, percent(share)),
                   speedup, false});
  }
}

std::string reason(Verdict verdict, const DoctorMeasurements& m, const Diagnosis& d) {
  switch (verdict) {
    case Verdict::kDataBound:
      return fmt::format(
          "the loop waited for data {} of the time, at {}, where compute alone runs at {} and "
          "the loader alone delivers {}",
          percent(d.wait_fraction), rate(d.loop_rate), rate(m.compute_rate), rate(m.loader_rate));
    case Verdict::kTransferBound:
      return fmt::format(
          "making the input on the device took {} of the loop ({:.2f} ms per batch), more than "
          "the wait for data ({})",
          percent(d.transfer_fraction), 1e3 * m.loop.per_batch(m.loop.h2d),
          percent(d.wait_fraction));
    case Verdict::kComputeBound:
      return fmt::format(
          "the loop waited for data {} of the time and the loader alone delivers {:.1f}x the "
          "batches compute alone takes ({} vs {})",
          percent(d.wait_fraction), d.headroom, rate(m.loader_rate), rate(m.compute_rate));
    case Verdict::kBalanced:
      break;
  }
  return fmt::format(
      "the loader alone delivers {} and compute alone takes {} ({:.2f}x): close, so speeding up "
      "one alone gains little; the loop waited for data {} of the time",
      rate(m.loader_rate), rate(m.compute_rate), d.headroom, percent(d.wait_fraction));
}

}  // namespace

const char* to_string(Verdict verdict) { return kVerdictNames.name(verdict); }

std::string DoctorAction::expected_gain() const {
  return fmt::format("{}{:.2f}x", upper_bound ? "up to " : "", speedup);
}

Verdict classify(const DoctorMeasurements& m) {
  const double wait = fraction(m.loop.data, m.loop.wall);
  const double transfer = fraction(m.loop.h2d, m.loop.wall);
  const double headroom = fraction(m.loader_rate, m.compute_rate);
  if (transfer >= kTransferShare && m.loop.h2d >= m.loop.data) return Verdict::kTransferBound;
  if (wait >= kDataWaitShare || headroom < kLoaderTooSlow) return Verdict::kDataBound;
  if (wait < kComputeBoundWait && headroom >= kLoaderHeadroom) return Verdict::kComputeBound;
  return Verdict::kBalanced;
}

Diagnosis diagnose(const DoctorMeasurements& m) {
  Diagnosis d;
  d.verdict = classify(m);
  d.loop_rate = loop_rate(m.loop);
  d.wait_fraction = fraction(m.loop.data, m.loop.wall);
  d.transfer_fraction = fraction(m.loop.h2d, m.loop.wall);
  d.headroom = fraction(m.loader_rate, m.compute_rate);
  d.reason = reason(d.verdict, m, d);
  switch (d.verdict) {
    case Verdict::kDataBound:
      loader_actions(m, d.loop_rate, d.actions);
      break;
    case Verdict::kTransferBound:
      transfer_actions(m, d.loop_rate, d.actions);
      break;
    case Verdict::kComputeBound:
      compute_actions(m, d.actions);
      break;
    case Verdict::kBalanced:
      loader_actions(m, d.loop_rate, d.actions);
      compute_actions(m, d.actions);
      break;
  }
  // What would not beat noise is no action.
  d.actions.erase(std::remove_if(d.actions.begin(), d.actions.end(),
                                 [](const DoctorAction& a) { return a.speedup < kWorthIt; }),
                  d.actions.end());
  // Predictions from measurements first, best first; then upper bounds, largest first.
  std::stable_sort(d.actions.begin(), d.actions.end(),
                   [](const DoctorAction& a, const DoctorAction& b) {
                     if (a.upper_bound != b.upper_bound) return !a.upper_bound;
                     return a.speedup > b.speedup;
                   });
  if (d.verdict == Verdict::kDataBound || d.verdict == Verdict::kBalanced)
    synthetic_cost_action(m, d.loop_rate, d.actions);
  return d;
}

}  // namespace stoker
