#include "stoker/trace/tracer.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace stoker::test {
namespace {

std::string current_thread_name() {
  char name[64] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  return name;
}

// Outer span, two inner spans one after the other, a counter between them.
void record_nested(Tracer* tracer, int i) {
  TraceSpan outer(tracer, "test", "outer");
  { TraceSpan inner(tracer, "test", "first"); }
  trace_counter(tracer, "test", "progress", i);
  { TraceSpan inner(tracer, "test", "second"); }
}

// Spans of one thread's events (in recording order) are disjoint or nested.
void expect_nested(const std::vector<TraceEvent>& events) {
  for (size_t a = 0; a < events.size(); ++a) {
    for (size_t b = a + 1; b < events.size(); ++b) {
      const TraceEvent& x = events[a];
      const TraceEvent& y = events[b];
      if (x.kind != TraceEvent::Kind::kSpan || y.kind != TraceEvent::Kind::kSpan) continue;
      const int64_t x_end = x.start_ns + x.duration_ns, y_end = y.start_ns + y.duration_ns;
      const bool disjoint = x_end <= y.start_ns || y_end <= x.start_ns;
      const bool x_in_y = y.start_ns <= x.start_ns && x_end <= y_end;
      const bool y_in_x = x.start_ns <= y.start_ns && y_end <= x_end;
      ASSERT_TRUE(disjoint || x_in_y || y_in_x) << a << " and " << b;
    }
  }
}

TEST(TracerTest, OneThreadRecordsInOrderWithItsName) {
  Tracer tracer;
  record_nested(&tracer, 7);
  std::vector<ThreadTrace> threads = tracer.snapshot();
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads[0].name, current_thread_name());
  const std::vector<TraceEvent>& e = threads[0].events;
  ASSERT_EQ(e.size(), 4u);
  // Spans are recorded when they end: inner ones first.
  EXPECT_STREQ(e[0].name, "first");
  EXPECT_EQ(e[1].kind, TraceEvent::Kind::kCounter);
  EXPECT_STREQ(e[1].name, "progress");
  EXPECT_EQ(e[1].value, 7);
  EXPECT_STREQ(e[2].name, "second");
  EXPECT_STREQ(e[3].name, "outer");
  EXPECT_STREQ(e[3].category, "test");
  EXPECT_LE(e[3].start_ns, e[0].start_ns);
  EXPECT_LE(e[0].start_ns + e[0].duration_ns, e[1].start_ns);
  EXPECT_LE(e[1].start_ns, e[2].start_ns);
  EXPECT_GE(e[3].start_ns + e[3].duration_ns, e[2].start_ns + e[2].duration_ns);
  expect_nested(e);
  EXPECT_EQ(tracer.dropped(), 0u);
}

TEST(TracerTest, NullTracerRecordsNothingAndDoesNotCrash) {
  record_nested(nullptr, 1);
  Tracer tracer;
  EXPECT_TRUE(tracer.snapshot().empty());
}

TEST(TracerTest, SeveralThreadsAllExportedAndNested) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 500;
  Tracer tracer;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&tracer, t] {
      pthread_setname_np(pthread_self(), ("trace-w" + std::to_string(t)).c_str());
      for (int i = 0; i < kRounds; ++i) record_nested(&tracer, i);
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<ThreadTrace> traces = tracer.snapshot();
  ASSERT_EQ(traces.size(), static_cast<size_t>(kThreads));
  std::vector<std::string> names;
  for (const ThreadTrace& trace : traces) {
    names.push_back(trace.name);
    EXPECT_EQ(trace.events.size(), 4u * kRounds) << trace.name;
    EXPECT_EQ(trace.dropped, 0u);
    // Counters of a thread come in its order.
    double last = -1;
    for (const TraceEvent& e : trace.events) {
      if (e.kind != TraceEvent::Kind::kCounter) continue;
      EXPECT_EQ(e.value, last + 1);
      last = e.value;
    }
    expect_nested(trace.events);
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"trace-w0", "trace-w1", "trace-w2", "trace-w3"}));
}

TEST(TracerTest, FullBuffersDropAndCountPerThread) {
  Tracer tracer(TracerOptions{10});
  for (int i = 0; i < 25; ++i) trace_counter(&tracer, "test", "n", i);
  std::thread([&tracer] {
    for (int i = 0; i < 12; ++i) trace_counter(&tracer, "test", "n", i);
  }).join();
  std::vector<ThreadTrace> traces = tracer.snapshot();
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(traces[0].events.size(), 10u);
  EXPECT_EQ(traces[0].dropped, 15u);
  EXPECT_EQ(traces[0].events.back().value, 9);  // the first ones are kept
  EXPECT_EQ(traces[1].events.size(), 10u);
  EXPECT_EQ(traces[1].dropped, 2u);
  EXPECT_EQ(tracer.dropped(), 17u);
}

TEST(TracerTest, ThreadAlternatingBetweenTracersKeepsOneBufferInEach) {
  Tracer a;
  Tracer b;
  for (int i = 0; i < 3; ++i) {
    trace_counter(&a, "test", "a", i);
    trace_counter(&b, "test", "b", i);
  }
  std::vector<ThreadTrace> ta = a.snapshot();
  std::vector<ThreadTrace> tb = b.snapshot();
  ASSERT_EQ(ta.size(), 1u);
  ASSERT_EQ(tb.size(), 1u);
  ASSERT_EQ(ta[0].events.size(), 3u);
  ASSERT_EQ(tb[0].events.size(), 3u);
  for (const TraceEvent& e : ta[0].events) EXPECT_STREQ(e.name, "a");
  for (const TraceEvent& e : tb[0].events) EXPECT_STREQ(e.name, "b");
}

TEST(TracerTest, AddedTracksKeepTheirNamesAndAreBounded) {
  Tracer tracer(TracerOptions{2});
  trace_counter(&tracer, "test", "n", 1);
  std::vector<Tracer::ImportedSpan> spans = {
      {"aten::mm", 10, 30}, {"aten::add", 40, 45}, {"aten::relu", 50, 60}};
  tracer.add_track("ops", 77, "op", spans);
  spans.clear();  // the Tracer holds its own copies of the names
  std::vector<ThreadTrace> traces = tracer.snapshot();
  ASSERT_EQ(traces.size(), 2u);
  const ThreadTrace& track = traces[1];
  EXPECT_EQ(track.name, "ops");
  EXPECT_EQ(track.tid, 77);
  ASSERT_EQ(track.events.size(), 2u);
  EXPECT_STREQ(track.events[0].name, "aten::mm");
  EXPECT_STREQ(track.events[0].category, "op");
  EXPECT_EQ(track.events[0].start_ns, 10);
  EXPECT_EQ(track.events[0].duration_ns, 20);
  EXPECT_STREQ(track.events[1].name, "aten::add");
  EXPECT_EQ(track.dropped, 1u);
  EXPECT_EQ(tracer.dropped(), 1u);
}

TEST(TracerTest, SnapshotWhileThreadsRecordSeesGrowingPrefixes) {
  Tracer tracer;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) trace_counter(&tracer, "test", "i", i);
  });
  size_t last = 0;
  for (int round = 0; round < 200; ++round) {
    std::vector<ThreadTrace> traces = tracer.snapshot();
    if (traces.empty()) continue;
    const std::vector<TraceEvent>& e = traces[0].events;
    ASSERT_GE(e.size(), last);
    for (size_t i = 0; i < e.size(); ++i) ASSERT_EQ(e[i].value, static_cast<double>(i));
    last = e.size();
  }
  stop = true;
  writer.join();
}

}  // namespace
}  // namespace stoker::test
