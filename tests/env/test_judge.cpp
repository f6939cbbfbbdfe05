// The trusted end of an untrusted candidate's evaluation (env/judge.h), against a stand-in for the candidate's
// process: it accepts only outputs that match the references, in the order the evaluation takes them, and
// computes the verdict itself; whatever else a candidate sends (its own verdict, an early "done", a timing its
// clock could not have seen, a malformed frame) is rejected with the reason named. GPU-free.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/sample_graphs.h"
#include "common/scratch_path.h"
#include "env/judge.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;
constexpr int kSets = 3, kN = 1000;

std::vector<float> input_of(int set) {
  std::vector<float> x(kN);
  for (int i = 0; i < kN; ++i) x[i] = std::sin(0.37f * float(i) + float(set)) * float(set + 1);
  return x;
}
std::vector<float> relu_of(std::vector<float> x) {
  for (float& v : x) v = std::max(v, 0.f);
  return x;
}

// A bundle of y = relu(x) over kN floats, kSets hidden sets.
Bundle relu_bundle() {
  fs::path dir = testing::scratch_path("judge-bundle");
  fs::create_directories(dir);
  nlohmann::json task = {{"name", "relu"}, {"graph", testing::unary_graph("relu", {kN})}, {"num_sets", kSets},
                         {"baselines", {{"eager", {{"median_ms", 1.0}, {"mean_ms", 1.0}, {"trials", 20}}},
                                        {"compile", {{"median_ms", 1.0}, {"mean_ms", 1.0}, {"trials", 20}}}}}};
  std::ofstream(dir / "task.json") << task.dump();
  for (int s = 0; s < kSets; ++s) {
    fs::create_directories(dir / "sets" / std::to_string(s));
    auto x = input_of(s), y = relu_of(x);
    std::ofstream(dir / "sets" / std::to_string(s) / "in0.bin", std::ios::binary).write((const char*)x.data(), kN * 4);
    std::ofstream(dir / "sets" / std::to_string(s) / "out0.bin", std::ios::binary).write((const char*)y.data(), kN * 4);
  }
  return load_bundle(dir.string());
}

void write_floats(const fs::path& path, const std::vector<float>& v) {
  std::ofstream(path, std::ios::binary).write((const char*)v.data(), std::streamsize(v.size() * 4));
}

// The relu bundle with drawn sets (`kforge draw-sets`' layout): set kSets fresh, set kSets + 1 beyond get_inputs'
// distribution. `edit` may change sets.json before it is read.
Bundle relu_bundle_with_drawn(const std::function<void(nlohmann::json&)>& edit = {}) {
  Bundle b = relu_bundle();
  fs::path dir = testing::scratch_path("judge-drawn");
  fs::remove_all(dir);
  nlohmann::json sets = nlohmann::json::array();
  for (int k = 0; k < 2; ++k) {
    fs::create_directories(dir / std::to_string(k));
    write_floats(dir / std::to_string(k) / "in0.bin", input_of(kSets + k));
    write_floats(dir / std::to_string(k) / "out0.bin", relu_of(input_of(kSets + k)));
    sets.push_back({{"dir", std::to_string(k)}, {"beyond", k == 1}, {"how", k ? "signs flipped" : "fresh"}, {"strict", {1e-4}}});
  }
  nlohmann::json listing = {{"sets", sets}};
  if (edit) edit(listing);
  std::ofstream(dir / "sets.json") << listing.dump();
  add_drawn_sets(b, dir.string());
  return b;
}

// Runs the judge against `candidate`, which gets the judge's task header and its two pipe ends.
EvalResult judged(const std::function<void(const nlohmann::json& task, FrameReader& answers, int out)>& candidate,
                  Bundle b = relu_bundle()) {
  EvalOptions eo;
  eo.copy_gbs = 1000;
  TrustedJudge judge(b, eo);
  int to_judge[2], to_candidate[2];
  EXPECT_EQ(pipe(to_judge), 0);
  EXPECT_EQ(pipe(to_candidate), 0);
  std::thread t([&] {
    FrameReader answers(to_candidate[0], 0);
    try {
      candidate(judge.task_header(), answers, to_judge[1]);
    } catch (const std::exception&) {  // the judge stopped listening
    }
    close(to_judge[1]);
  });
  FrameReader in(to_judge[0], 1 << 20);
  EvalResult r;
  std::exception_ptr thrown;
  try {
    r = judge.run(in, to_candidate[1], 10);
  } catch (...) {
    thrown = std::current_exception();
  }
  close(to_candidate[1]);
  t.join();
  close(to_judge[0]);
  close(to_candidate[0]);
  if (thrown) std::rethrow_exception(thrown);
  return r;
}

void send_set(int out, int s, const std::vector<float>& y, bool after_timing = false) {
  write_frame(out, {{"judge", true}, {"set", s}, {"after_timing", after_timing}}, {{y.data(), y.size() * 4}});
}

// The candidate's process up to its turn on the GPU: ready, hello, the turn asked for (and, with `answers`, granted).
void begin(int out, FrameReader* answers = nullptr) {
  write_frame(out, {{"ready", true}});
  write_frame(out, {{"hello", true}, {"compiled", true}});
  write_frame(out, {{"turn", true}});
  if (answers) answers->next(5);
}

nlohmann::json stats(double ms, int trials = 20) {
  return {{"median_ms", ms}, {"mean_ms", ms}, {"min_ms", ms}, {"trials", trials}};
}

// An honest candidate, but for `wrong_set` (-1: none), whose outputs are off; `sets` sets, the check after timing
// on `last`.
void honest(FrameReader& answers, int out, int wrong_set = -1, int sets = kSets, int last = kSets - 1) {
  begin(out, &answers);
  auto send = [&](int s) {
    auto y = relu_of(input_of(s));
    if (s == wrong_set) y[7] += 1.f;
    send_set(out, s, y);
    return answers.next(5)->header.value("relaxed", false);
  };
  for (int s = 0; s <= last; ++s)
    if (!send(s)) return write_frame(out, {{"done", true}});
  write_frame(out, {{"timed", stats(0.01)}});
  send_set(out, last, relu_of(input_of(last)), true);
  answers.next(5);
  for (int s = last + 1; s < sets; ++s) send(s);  // beyond get_inputs' distribution, last
  write_frame(out, {{"done", true}, {"log", "ok"}});
}

TEST(TrustedJudge, TellsTheCandidateTheTaskAndNothingOfItsAnswers) {
  Bundle b = relu_bundle();
  nlohmann::json h = TrustedJudge(b, {}).task_header();
  EXPECT_EQ(h["num_sets"], kSets);
  EXPECT_TRUE(h["task"].contains("graph"));
  for (const char* secret : {"tolerance", "strict_tolerance", "source", "sets"}) EXPECT_FALSE(h.contains(secret)) << secret;
  EXPECT_EQ(h.dump().find(b.dir), std::string::npos) << "the bundle's folder is not the candidate's business";
}

TEST(TrustedJudge, AcceptsMatchingOutputsAndPays) {
  EvalResult r = judged([](const nlohmann::json&, FrameReader& a, int out) { honest(a, out); });
  EXPECT_TRUE(r.strict) << r.log;
  EXPECT_TRUE(r.relaxed);
  EXPECT_GT(r.reward.reward, 0) << r.log;
  EXPECT_NEAR(r.native.median_ms, 0.01, 1e-9);
}

TEST(TrustedJudge, RejectsWrongOutputsNamingTheSetAndElement) {
  EvalResult r = judged([](const nlohmann::json&, FrameReader& a, int out) { honest(a, out, 1); });
  EXPECT_FALSE(r.relaxed);
  EXPECT_EQ(r.reward.reward, -1);
  EXPECT_NE(r.log.find("set 1: y: 1 of 1000 elements"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("first at index 7"), std::string::npos) << r.log;
}

// Hack catalogue, writing its own verdict: nothing a candidate says about itself is a verdict.
TEST(TrustedJudge, RejectsACandidateThatWritesItsOwnVerdict) {
  EvalResult r = judged([](const nlohmann::json&, FrameReader&, int out) {
    write_frame(out, {{"ready", true}});
    write_frame(out, {{"hello", true}, {"compiled", true}});
    write_frame(out, {{"done", true}, {"strict", true}, {"relaxed", true}, {"reward", 10.0}, {"tier", "strict"}});
  });
  EXPECT_FALSE(r.relaxed);
  EXPECT_EQ(r.reward.reward, -1);
  EXPECT_NE(r.log.find("said it was done before its evaluation did (0 of 3 sets judged"), std::string::npos) << r.log;
  r = judged([](const nlohmann::json&, FrameReader&, int out) {
    write_frame(out, {{"ready", true}});
    write_frame(out, {{"hello", true}, {"compiled", true}});
    write_frame(out, {{"result", {{"strict", true}, {"reward", 10.0}}}});
  });
  EXPECT_FALSE(r.relaxed);
  EXPECT_NE(r.log.find("unexpected frame"), std::string::npos) << r.log;
}

TEST(TrustedJudge, RejectsStepsOutOfOrder) {
  EvalResult r = judged([](const nlohmann::json&, FrameReader&, int out) {  // the timing before any check
    write_frame(out, {{"ready", true}});
    write_frame(out, {{"hello", true}, {"compiled", true}});
    write_frame(out, {{"timed", stats(0.01)}});
  });
  EXPECT_FALSE(r.relaxed);
  EXPECT_NE(r.log.find("a timing came before every set was judged"), std::string::npos) << r.log;
  r = judged([](const nlohmann::json&, FrameReader& a, int out) {  // set 0 twice, skipping set 1
    begin(out, &a);
    send_set(out, 0, relu_of(input_of(0)));
    a.next(5);
    send_set(out, 0, relu_of(input_of(0)));
  });
  EXPECT_FALSE(r.relaxed);
  EXPECT_NE(r.log.find("outputs of set 0 came where set 1 was due"), std::string::npos) << r.log;
}

// Hack catalogue, holding or skipping the GPU's turn: the judge takes the lock for the candidate, once, and no
// output is judged before it.
TEST(TrustedJudge, JudgesNothingBeforeTheCandidatesTurnOnTheGpu) {
  EvalResult r = judged([](const nlohmann::json&, FrameReader&, int out) {
    write_frame(out, {{"ready", true}});
    write_frame(out, {{"hello", true}, {"compiled", true}});
    send_set(out, 0, relu_of(input_of(0)));
  });
  EXPECT_FALSE(r.relaxed);
  EXPECT_NE(r.log.find("outputs came before the candidate's turn on the GPU"), std::string::npos) << r.log;
  r = judged([](const nlohmann::json&, FrameReader& a, int out) {
    begin(out, &a);
    write_frame(out, {{"turn", true}});
  });
  EXPECT_NE(r.log.find("a second turn on the GPU was asked for"), std::string::npos) << r.log;
}

// A ModelNew loads its own code in its turn: the turn may come before the hello, once.
TEST(TrustedJudge, GrantsTheTurnBeforeTheHelloToACandidateLoadedInItsTurn) {
  EvalResult r = judged([](const nlohmann::json&, FrameReader& a, int out) {
    write_frame(out, {{"ready", true}});
    write_frame(out, {{"turn", true}});
    EXPECT_TRUE(a.next(5)->header.value("turn", false));
    write_frame(out, {{"hello", true}, {"compiled", true}});
    for (int s = 0; s < kSets; ++s) {
      send_set(out, s, relu_of(input_of(s)));
      a.next(5);
    }
    write_frame(out, {{"timed", stats(0.01)}});
    send_set(out, kSets - 1, relu_of(input_of(kSets - 1)), true);
    a.next(5);
    write_frame(out, {{"done", true}});
  });
  EXPECT_TRUE(r.strict) << r.log;
  r = judged([](const nlohmann::json&, FrameReader& a, int out) {
    write_frame(out, {{"ready", true}});
    write_frame(out, {{"turn", true}});
    a.next(5);
    write_frame(out, {{"hello", true}, {"compiled", true}});
    write_frame(out, {{"turn", true}});
  });
  EXPECT_NE(r.log.find("a second turn on the GPU was asked for"), std::string::npos) << r.log;
}

TEST(TrustedJudge, RejectsOutputsOfTheWrongSize) {
  EvalResult r = judged([](const nlohmann::json&, FrameReader&, int out) {
    begin(out);
    send_set(out, 0, std::vector<float>(10, 0.f));
  });
  EXPECT_FALSE(r.relaxed);
  EXPECT_NE(r.log.find("sent 40 bytes of outputs; the task's outputs hold 4000"), std::string::npos) << r.log;
}

// Hack catalogue, patching timers: trials that add up to more than the judge's clock saw, or fewer than asked.
TEST(TrustedJudge, RejectsATimingItsClockCouldNotHaveSeen) {
  auto lying = [](nlohmann::json timed) {
    return judged([timed](const nlohmann::json&, FrameReader& a, int out) {
      begin(out, &a);
      for (int s = 0; s < kSets; ++s) send_set(out, s, relu_of(input_of(s))), a.next(5);
      write_frame(out, {{"timed", timed}});
    });
  };
  EvalResult r = lying(stats(500.0));
  EXPECT_FALSE(r.relaxed);
  EXPECT_NE(r.log.find("timing not credible"), std::string::npos) << r.log;
  r = lying(stats(0.01, 1));
  EXPECT_NE(r.log.find("reports 1 trials; 20 were asked for"), std::string::npos) << r.log;
  r = lying(stats(-1.0));
  EXPECT_NE(r.log.find("no usable timing"), std::string::npos) << r.log;
}

TEST(TrustedJudge, RejectsMalformedFramesWithoutCrashing) {
  EvalResult r = judged([](const nlohmann::json&, FrameReader&, int out) {
    write_frame(out, {{"ready", true}});
    write_frame(out, {{"hello", true}, {"compiled", true}});
    std::string junk = "{not json\n";
    (void)!write(out, junk.data(), junk.size());
  });
  EXPECT_NE(r.log.find("not a JSON object"), std::string::npos) << r.log;
  r = judged([](const nlohmann::json&, FrameReader&, int out) {
    begin(out);
    write_frame(out, {{"judge", true}, {"set", "zero"}});
  });
  EXPECT_FALSE(r.relaxed);
  EXPECT_NE(r.log.find("rejected"), std::string::npos) << r.log;
  r = judged([](const nlohmann::json&, FrameReader&, int out) {
    begin(out);
    write_frame(out, {{"judge", true}, {"set", 0}, {"bytes", 1ull << 40}});
  });
  EXPECT_NE(r.log.find("at most 1048576 are expected"), std::string::npos) << r.log;
}

TEST(TrustedJudge, AProcessThatFailsBeforeTheCandidateLoadsIsNotAVerdict) {
  try {
    judged([](const nlohmann::json&, FrameReader&, int) {});
    FAIL() << "judged a candidate whose process never started";
  } catch (const NotEvaluated& e) {
    EXPECT_NE(std::string(e.what()).find("could not start"), std::string::npos) << e.what();
  }
}

TEST(TrustedJudge, PassesOnACompileFailure) {
  EvalResult r = judged([](const nlohmann::json&, FrameReader&, int out) {
    write_frame(out, {{"ready", true}});
    write_frame(out, {{"hello", true}, {"compiled", false}, {"log", "error: expected a ';'"}});
  });
  EXPECT_FALSE(r.compiled);
  EXPECT_EQ(r.log, "error: expected a ';'");
}

// Fresh sets count for the KernelBench-compatible verdict; a set beyond get_inputs' distribution has its own, and
// the candidate's process is not told how it did there.
TEST(TrustedJudge, JudgesDrawnSetsAndGivesSetsBeyondTheDistributionAVerdictOfTheirOwn) {
  const int fresh = kSets, beyond = kSets + 1, sets = kSets + 2;
  EvalResult r = judged([&](const nlohmann::json&, FrameReader& a, int out) { honest(a, out, -1, sets, fresh); },
                        relu_bundle_with_drawn());
  EXPECT_TRUE(r.strict) << r.log;
  EXPECT_EQ(r.beyond_sets, 1);
  EXPECT_EQ(r.distribution_verdict(), "correct beyond get_inputs' distribution");
  r = judged([&](const nlohmann::json&, FrameReader& a, int out) { honest(a, out, beyond, sets, fresh); }, relu_bundle_with_drawn());
  EXPECT_TRUE(r.strict) << r.log;  // the KernelBench-compatible verdict stands
  EXPECT_GT(r.reward.reward, 0);
  EXPECT_FALSE(r.beyond_relaxed);
  EXPECT_EQ(r.distribution_verdict(), "correct only on get_inputs' distribution");
  EXPECT_EQ(r.to_json()["distribution"]["verdict"], "correct only on get_inputs' distribution");
  EXPECT_NE(r.log.find("beyond get_inputs' distribution (signs flipped): set 4: y: 1 of 1000"), std::string::npos) << r.log;
  r = judged([&](const nlohmann::json&, FrameReader& a, int out) { honest(a, out, fresh, sets, fresh); }, relu_bundle_with_drawn());
  EXPECT_FALSE(r.relaxed) << "a fresh set is one of get_inputs' distribution";
  EXPECT_NE(r.log.find("set 3: y: 1 of 1000"), std::string::npos) << r.log;
  r = judged([&](const nlohmann::json&, FrameReader& a, int out) {  // the check after timing on a set beyond
    begin(out, &a);
    for (int s = 0; s <= fresh; ++s) send_set(out, s, relu_of(input_of(s))), a.next(5);
    write_frame(out, {{"timed", stats(0.01)}});
    send_set(out, beyond, relu_of(input_of(beyond)), true);
  }, relu_bundle_with_drawn());
  EXPECT_FALSE(r.relaxed);
  EXPECT_NE(r.log.find("where the check after timing on set 3 was due"), std::string::npos) << r.log;
  r = judged([&](const nlohmann::json&, FrameReader& a, int out) {  // a crash among the sets beyond: that verdict only
    begin(out, &a);
    for (int s = 0; s <= fresh; ++s) send_set(out, s, relu_of(input_of(s))), a.next(5);
    write_frame(out, {{"timed", stats(0.01)}});
    send_set(out, fresh, relu_of(input_of(fresh)), true);
    a.next(5);
    write_frame(out, {{"rejected", "run failed: an illegal memory access\n"}});
  }, relu_bundle_with_drawn());
  EXPECT_TRUE(r.strict) << r.log;
  EXPECT_EQ(r.distribution_verdict(), "correct only on get_inputs' distribution");
  EXPECT_NE(r.log.find("beyond get_inputs' distribution: run failed: an illegal memory access"), std::string::npos) << r.log;
  nlohmann::json h = TrustedJudge(relu_bundle_with_drawn(), {}).task_header();
  EXPECT_EQ(h["num_sets"], kSets);
  EXPECT_EQ(h["drawn"], nlohmann::json::parse(R"([{"beyond": false}, {"beyond": true}])"));
}

TEST(DrawnSets, ANamedCauseForEveryMalformedListing) {
  auto error_of = [](const std::function<void(nlohmann::json&)>& edit) -> std::string {
    try {
      relu_bundle_with_drawn(edit);
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of([](nlohmann::json& l) { l["sets"][0]["beyond"] = true; }).find("holds no fresh set"), std::string::npos);
  EXPECT_NE(error_of([](nlohmann::json& l) { l["sets"][1]["dir"] = "../sets/0"; }).find("a plain name"), std::string::npos);
  EXPECT_NE(error_of([](nlohmann::json& l) { l["sets"][1].erase("strict"); }).find("'strict'"), std::string::npos);
  EXPECT_NE(error_of([](nlohmann::json& l) { l["sets"][1]["strict"] = {0.5}; }).find("outside"), std::string::npos);
  EXPECT_NE(error_of([](nlohmann::json& l) { l["sets"][1]["dir"] = "7"; }).find("cannot read"), std::string::npos);
  // A link inside would have root copy whatever it points to into a candidate's view (env/sandbox.cpp's staging).
  fs::path drawn = testing::scratch_path("judge-drawn");
  fs::remove(drawn / "1" / "in0.bin");
  fs::create_symlink("/etc/passwd", drawn / "1" / "in0.bin");
  Bundle linked = relu_bundle();
  try {
    add_drawn_sets(linked, drawn.string());
    ADD_FAILURE() << "a draw holding a symbolic link was taken";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("holds a symbolic link"), std::string::npos) << e.what();
  }
  Bundle b = relu_bundle_with_drawn();
  EXPECT_EQ(b.num_sets(), kSets + 2);
  EXPECT_EQ(b.declared_sets(), kSets + 1);
  EXPECT_EQ(b.stored_sets(), kSets);
}

// The global tiers come from the bundle (task.json "tolerance", written by the bridge): one home, read everywhere.
TEST(TrustedJudge, JudgesWithTheBundlesOwnTiers) {
  Bundle b = relu_bundle();
  b.tolerance = {2e-3, 1e-2};
  auto off_by = [](float e) {
    return [e](const nlohmann::json&, FrameReader& a, int out) {
      begin(out, &a);
      for (int s = 0; s < kSets; ++s) {
        auto y = relu_of(input_of(s));
        y[3] += e;
        send_set(out, s, y);
        a.next(5);
      }
      write_frame(out, {{"timed", stats(0.01)}});
      auto y = relu_of(input_of(kSets - 1));
      y[3] += e;
      send_set(out, kSets - 1, y, true);
      a.next(5);
      write_frame(out, {{"done", true}});
    };
  };
  EXPECT_TRUE(judged(off_by(1e-3f), b).strict) << "within the bundle's strict tier of 2e-3";
  EXPECT_FALSE(judged(off_by(1e-3f)).strict) << "outside kforge's default of 1e-4";
  fs::path dir = testing::scratch_path("judge-bundle");
  nlohmann::json task = nlohmann::json::parse(read_file((dir / "task.json").string()));
  task["tolerance"] = {{"strict", 0.5}, {"relaxed", 0.1}};
  std::ofstream(dir / "task.json") << task.dump();
  try {
    load_bundle(dir.string());
    ADD_FAILURE() << "a strict tier looser than the relaxed one was taken";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'tolerance' must be"), std::string::npos) << e.what();
  }
}

// The host comparison is the Verifier's rule (env/verify.cpp's kf_compare_f32), element for element.
TEST(CompareOnHost, FollowsTheVerifiersRule) {
  const float inf = INFINITY, nan = NAN;
  std::vector<float> ref = {1.f, 2.f, 0.f, inf, -inf, 5.f, 100.f};
  std::vector<float> out = {1.f, 2.0004f, 0.0005f, inf, inf, nan, 100.02f};
  CompareResult c = compare_on_host(out.data(), ref.data(), 7, DType::f32, {});
  EXPECT_EQ(c.bad_strict, 3) << c.describe("y");  // 2.0004 (> 1e-4 + 2e-4), 0.0005, 100.02 (> 1e-4 + 1e-2)
  EXPECT_EQ(c.bad_relaxed, 0);
  EXPECT_EQ(c.nonfinite, 2);  // +inf for -inf, NaN for 5
  EXPECT_EQ(c.first_bad, 1);
  EXPECT_FLOAT_EQ(float(c.got), 2.0004f);
  EXPECT_FALSE(c.strict());
  std::vector<int64_t> a = {1, 2, 3}, b = {1, 5, 3};
  c = compare_on_host(a.data(), b.data(), 3, DType::i64, {});
  EXPECT_EQ(c.bad_strict, 1);
  EXPECT_EQ(c.first_bad, 1);
  EXPECT_TRUE(compare_on_host(a.data(), a.data(), 3, DType::i64, {}).strict());
}

}  // namespace
}  // namespace kforge
