#include "stoker/trace/chrome_trace.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "stoker/testing/chrome_trace_check.h"
#include "stoker/testing/temp_dir.h"

namespace stoker::test {
namespace {

using nlohmann::json;

TEST(ChromeTraceTest, EventsCarryTheFieldsChromeReads) {
  Tracer tracer;
  int64_t worker_tid = 0;
  std::thread([&] {
    pthread_setname_np(pthread_self(), "trace-worker");
    TraceSpan outer(&tracer, "pipeline", "batch");
    { TraceSpan inner(&tracer, "pipeline", "read"); }
    trace_counter(&tracer, "pipeline", "queue", 3);
    worker_tid = tracer.snapshot().at(0).tid;
  }).join();
  { TraceSpan main_span(&tracer, "train", "step"); }

  const json doc = json::parse(chrome_trace_json(tracer));
  const int64_t pid = getpid();
  EXPECT_EQ(doc.at("otherData").at("dropped_events"), 0);
  EXPECT_EQ(stoker::testing::thread_names(doc).at(worker_tid), "trace-worker");
  EXPECT_EQ(stoker::testing::thread_names(doc).size(), 2u);
  int spans = 0, counters = 0, process_names = 0;
  for (const json& e : doc.at("traceEvents")) {
    EXPECT_EQ(e.at("pid"), pid);
    const std::string ph = e.at("ph");
    if (ph == "X") {
      ++spans;
      EXPECT_GE(e.at("dur").get<double>(), 0);
      EXPECT_GE(e.at("ts").get<double>(), 0);
      if (e.at("name") == "read" || e.at("name") == "batch") {
        EXPECT_EQ(e.at("cat"), "pipeline");
        EXPECT_EQ(e.at("tid"), worker_tid);
      } else {
        EXPECT_EQ(e.at("name"), "step");
        EXPECT_EQ(e.at("cat"), "train");
        EXPECT_NE(e.at("tid"), worker_tid);
      }
    } else if (ph == "C") {
      ++counters;
      EXPECT_EQ(e.at("name"), "queue");
      EXPECT_EQ(e.at("args").at("value"), 3.0);
      EXPECT_EQ(e.at("tid"), worker_tid);
    } else {
      ASSERT_EQ(ph, "M");
      if (e.at("name") == "process_name") ++process_names;
    }
  }
  EXPECT_EQ(spans, 3);
  EXPECT_EQ(counters, 1);
  EXPECT_EQ(process_names, 1);
  EXPECT_EQ(stoker::testing::nesting_error(doc), "");
}

TEST(ChromeTraceTest, TimesAreMicrosecondsOfTheRecordedNanoseconds) {
  Tracer tracer;
  tracer.complete("c", "s", tracer.origin_ns() + 1500, tracer.origin_ns() + 4250);
  const json doc = json::parse(chrome_trace_json(tracer));
  const json& span = doc.at("traceEvents").back();
  EXPECT_DOUBLE_EQ(span.at("ts").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(span.at("dur").get<double>(), 2.75);
}

TEST(ChromeTraceTest, NestingCheckFindsOverlap) {
  Tracer tracer;
  const int64_t t = tracer.origin_ns();
  tracer.complete("c", "a", t, t + 2000);
  tracer.complete("c", "b", t + 1000, t + 3000);
  EXPECT_NE(stoker::testing::nesting_error(json::parse(chrome_trace_json(tracer))), "");
}

TEST(ChromeTraceTest, DroppedEventsAreReported) {
  Tracer tracer(TracerOptions{2});
  for (int i = 0; i < 5; ++i) trace_counter(&tracer, "c", "n", i);
  const json doc = json::parse(chrome_trace_json(tracer));
  EXPECT_EQ(doc.at("otherData").at("dropped_events"), 3);
}

TEST(ChromeTraceTest, ThreadNameCutInsideUtf8StillGivesJson) {
  Tracer tracer;
  std::thread([&] {
    // 14 ASCII bytes and the first byte of "é": a name pthread cut at 15 bytes.
    pthread_setname_np(pthread_self(), "abcdefghijklmn\xc3");
    trace_counter(&tracer, "c", "n", 1);
  }).join();
  EXPECT_TRUE(json::parse(chrome_trace_json(tracer)).is_object());
}

TEST(ChromeTraceTest, WritesTheFileAndRefusesBadPaths) {
  stoker::testing::TempDir dir;
  Tracer tracer;
  { TraceSpan span(&tracer, "c", "s"); }
  ASSERT_TRUE(write_chrome_trace(tracer, dir / "t.json").is_ok());
  std::ifstream in(dir / "t.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(json::parse(text.str()).at("traceEvents").size(), 3u);

  EXPECT_EQ(write_chrome_trace(tracer, dir / "none/t.json").code(), StatusCode::kIoError);
  Status s = write_chrome_trace(tracer, dir.path());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(dir.path()), std::string::npos) << s.message();
}

}  // namespace
}  // namespace stoker::test
