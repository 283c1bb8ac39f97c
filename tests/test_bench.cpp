// seqlab bench decode as a user runs it, on two tiny language models (softmax and T2R, trained a
// couple of steps here: speed does not depend on what they learned): every (model, engine,
// context, test) row in every format, and a context beyond the max context skipped with a note.
#include "cli_testing.h"

#include <nlohmann/json.hpp>

#include <map>

#include <fstream>
#include <sstream>

using namespace seqlab::testing;

namespace {

std::string corpus() {
  const auto p = cli_tmp("corpus.txt");
  std::ofstream out(p);
  for (int i = 0; i < 200; ++i) out << i << " the cat sat on the mat\n";
  return p;
}

// `shape` is the width, heads and layers; the directory is named after arch, extra and shape.
std::string lm_model(const std::string& arch, const std::string& text,
                     const std::string& extra = "",
                     const std::string& shape = "--d-model 16 --n-head 2 --n-layer 1") {
  const bool tiny = shape.rfind("--d-model 16 ", 0) == 0;
  const auto d = cli_tmp("lm_" + arch + (extra.empty() ? "" : "_extra") + (tiny ? "" : "_big"));
  auto r = run_seqlab("train --task lm --corpus " + text + " --tokenizer byte --arch " + arch +
                      " " + extra + " " + shape +
                      " --min-len 16 --max-len 16 "
                      "--max-context 96 --steps 2 --batch 2 --eval-size 2 --threads 1 -q --out " +
                      d);
  EXPECT_EQ(r.code, 0) << r.err;
  return d;
}

}  // namespace

TEST(BenchDecodeCli, EveryFormatHoldsEveryRow) {
  const auto text = corpus();
  const auto sm = lm_model("softmax", text), t2r = lm_model("t2r", text);
  const std::string grid = "bench decode --model " + sm + "," + t2r +
                           " --contexts 8,200 --gen 4 --engines fast,torch -q ";
  auto r = run_seqlab(grid + "--reps 2 --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 2u * 2 * 2 * 2);  // models × contexts × engines × {pp, tg}
  int measured = 0;
  for (const auto& row : rows) {
    for (const char* key : {"model", "arch", "engine", "context", "test", "tokens"})
      EXPECT_TRUE(row.contains(key)) << key << " in " << row.dump();
    if (row["context"] == 200) {
      EXPECT_NE(row.value("note", "").find("max context 96"), std::string::npos) << row.dump();
      continue;
    }
    ++measured;
    for (const char* key : {"tokens_per_s", "ms_per_token", "peak_rss_mb", "reps", "sd"})
      EXPECT_TRUE(row.contains(key)) << key << " in " << row.dump();
    EXPECT_GT(row["tokens_per_s"].get<double>(), 0) << row.dump();
    EXPECT_GT(row["peak_rss_mb"].get<double>(), 1) << row.dump();
    EXPECT_GE(row["sd"].get<double>(), 0) << row.dump();
    EXPECT_EQ(row["reps"], 2);
    if (row["test"] == "tg") {
      EXPECT_GT(row["fast_over_torch"].get<double>(), 0) << row.dump();
    }
    // The roofline floor and the ratio to it: fast generation rows only.
    const bool fast_tg = row["test"] == "tg" && row["engine"] == "fast";
    EXPECT_EQ(row.contains("floor_ms"), fast_tg) << row.dump();
    if (fast_tg) {
      EXPECT_GT(row["floor_ms"].get<double>(), 0) << row.dump();
      EXPECT_NEAR(row["x_floor"].get<double>(),
                  row["ms_per_token"].get<double>() / row["floor_ms"].get<double>(), 1e-9)
          << row.dump();
    }
  }
  EXPECT_EQ(measured, 8);

  r = run_seqlab(grid + "--reps 1 --format csv");
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream csv(r.out);
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("model,arch,engine,context,test,", 0), 0u) << line;
  int lines = 0;
  while (std::getline(csv, line)) {
    ++lines;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 18) << line;  // 19 columns, weights last
  }
  EXPECT_EQ(lines, 16);

  r = run_seqlab(grid + "--reps 1 --format md");
  ASSERT_EQ(r.code, 0) << r.err;
  int table_rows = 0;
  std::istringstream md(r.out);
  while (std::getline(md, line))
    if (line.rfind("| " + sm, 0) == 0 || line.rfind("| " + t2r, 0) == 0) ++table_rows;
  EXPECT_EQ(table_rows, 8) << r.out;  // models × contexts × engines
  EXPECT_NE(r.out.find("skipped: context 200"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| floor ms | x floor |"), std::string::npos) << r.out;

  // A batch axis: batch 3 runs on the fast engine only (torch's rows say why), with the issue-35
  // fields; its tokens/s are the three sequences' together.
  r = run_seqlab("bench decode --model " + t2r +
                 " --contexts 8 --gen 4 --engines fast,torch --batch 1,3 --decoder-threads 2 "
                 "--reps 1 -q --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto batched = nlohmann::json::parse(r.out);
  ASSERT_EQ(batched.size(), 2u * 2 * 2);  // batches × engines × {pp, tg}
  for (const auto& row : batched) {
    EXPECT_EQ(row["weights"], "f32") << row.dump();
    if (row["batch"] == 3 && row["engine"] == "torch") {
      EXPECT_NE(row.value("note", "").find("fast engine only"), std::string::npos) << row.dump();
      continue;
    }
    EXPECT_GT(row[row["test"].get<std::string>() + "_tokens_per_s"].get<double>(), 0) << row.dump();
    if (row["engine"] == "fast") EXPECT_EQ(row["threads"], 2) << row.dump();
    if (row["engine"] == "fast" && row["test"] == "tg")
      EXPECT_GT(row.value("weight_bytes", 0), 0) << row.dump();
  }

  // A weights axis: each format's rows name it and count the bytes a token reads in it (int8: 34
  // bytes per 32 weights of every matrix, the rest fp32).
  r = run_seqlab("bench decode --model " + t2r +
                 " --contexts 8 --gen 2 --engines fast --weights f32,bf16,int8 --reps 1 -q "
                 "--format json");
  ASSERT_EQ(r.code, 0) << r.err;
  std::map<std::string, double> bytes;
  for (const auto& row : nlohmann::json::parse(r.out))
    if (row["test"] == "tg") bytes[row["weights"].get<std::string>()] = row["weight_bytes"];
  ASSERT_EQ(bytes.size(), 3u) << r.out;
  EXPECT_LT(bytes["bf16"], 0.6 * bytes["f32"]);
  EXPECT_LT(bytes["int8"], 0.4 * bytes["f32"]);
  EXPECT_LT(bytes["int8"], bytes["bf16"]);
  expect_cli_error("bench decode --model " + sm + " --batch 0", "--batch");
  expect_cli_error("bench decode --model " + sm + " --format xml", "--format");
  expect_cli_error("bench decode --model " + sm + " --engines fast,jax", "jax");
}

// Each row's peak is its child's own (VmHWM), not wait4's ru_maxrss: a posix_spawn child's
// maxrss starts at the bench process's peak, and the bench process loads every model first. So a
// tiny model benched after a 100+ MB one reads what it reads alone, not the big model's load.
TEST(BenchDecodeCli, PeakIsEachChildsOwn) {
  const auto text = corpus();
  const auto tiny = lm_model("t2r", text);
  const auto big = lm_model("t2r", text, "", "--d-model 768 --n-head 4 --n-layer 4");
  auto tiny_peak = [&](const std::string& models) {
    auto b = run_seqlab("bench decode --model " + models +
                        " --contexts 8 --gen 2 --engines torch --reps 1 -q --format json");
    EXPECT_EQ(b.code, 0) << b.err;
    std::map<std::string, double> peak;  // model -> its tg row's peak
    for (const auto& row : nlohmann::json::parse(b.out))
      if (row["test"] == "tg") peak[row["model"].get<std::string>()] = row["peak_rss_mb"];
    EXPECT_EQ(peak.count(tiny), 1u) << b.out;
    return std::make_pair(peak[tiny], peak[big]);
  };
  const double alone = tiny_peak(tiny).first;
  const auto [after_big, big_peak] = tiny_peak(big + "," + tiny);
  // The big model's weights alone are 113 MB (28 M fp32 parameters).
  EXPECT_GT(big_peak, alone + 80) << "big " << big_peak << " MB, tiny " << alone << " MB";
  EXPECT_NEAR(after_big, alone, 25) << "the tiny model's peak after the big one was loaded";
}

// A model the fast engine does not support (a mixture of attentive experts): its fast rows are
// skipped with the reason and a notice; torch is still measured.
TEST(BenchDecodeCli, UnsupportedModelSkipsTheFastEngine) {
  const auto mae = lm_model("softmax", corpus(), "--mae true");
  auto r = run_seqlab("bench decode --model " + mae +
                      " --contexts 8 --gen 2 --reps 1 --engines fast,torch --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("does not support"), std::string::npos) << r.err;
  const auto rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    if (row["engine"] == "fast") {
      EXPECT_NE(row.value("note", "").find("mae = true"), std::string::npos) << row.dump();
    } else {
      EXPECT_GT(row["tokens_per_s"].get<double>(), 0) << row.dump();
    }
  }
}
