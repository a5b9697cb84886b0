#include "flotilla/io/dataset.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "flotilla/comm/hash_store.h"
#include "flotilla/common/error.h"
#include "flotilla/io/dataset_feed.h"

namespace flotilla::io {
namespace {

namespace fs = std::filesystem;

// A fresh directory of data files, removed at the end of the test.
class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "flotilla_dataset_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // File `name` holding `records` lines "2 <id> <id+1> 1 <id % 2>" with ids
  // first_id, first_id + 1, ...
  std::string Write(const std::string& name, int first_id, int records) {
    std::string text;
    for (int id = first_id; id < first_id + records; ++id)
      text += "2 " + std::to_string(id) + " " + std::to_string(id + 1) + " 1 " + std::to_string(id % 2) + "\n";
    return WriteText(name, text);
  }
  std::string WriteText(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  static std::vector<SlotSpec> Slots() { return {{"ids", SlotType::kInt64}, {"label", SlotType::kInt64}}; }
  // The first id of every record in memory.
  static std::multiset<int64_t> FirstIds(const SlotColumns& c) {
    std::multiset<int64_t> ids;
    for (int64_t r = 0; r < c.records(); ++r) ids.insert(c.slots[0].int64s[c.slots[0].offsets[r]]);
    return ids;
  }
  std::string LoadError(Dataset* ds) {
    try {
      ds->LoadIntoMemory();
    } catch (const flotilla::Error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(DatasetTest, LoadCountsAcrossThreadsAndFiles) {
  for (int files : {1, 2, 5}) {
    std::vector<std::string> list;
    for (int f = 0; f < files; ++f) list.push_back(Write("part-" + std::to_string(f), f * 1000, 10 + f));
    for (int threads : {1, 2, 3, 8}) {
      Dataset ds(DatasetKind::kInMemory);
      ds.SetUseVar(Slots());
      ds.SetFileList(list);
      ds.SetThreadNum(threads);
      ds.LoadIntoMemory();
      const int64_t expected = 10 * files + files * (files - 1) / 2;
      EXPECT_EQ(ds.MemoryDataSize(), expected) << files << " files, " << threads << " threads";
      EXPECT_EQ(ds.ShuffleDataSize(), expected);
      EXPECT_EQ(ds.records().slots[0].int64s[0], 0);  // file order is kept
      EXPECT_EQ(*FirstIds(ds.records()).rbegin(), (files - 1) * 1000 + 9 + files - 1);
    }
  }
}

TEST_F(DatasetTest, PipeCommandPerFileShuffleBatchesAndRelease) {
  Dataset ds(DatasetKind::kInMemory);
  ds.SetUseVar({{"tag", SlotType::kInt64}, {"ids", SlotType::kInt64}, {"label", SlotType::kInt64}});
  ds.SetPipeCommand("sed 's/^/1 7 /'");  // prepends a slot to every line
  ds.SetFileList({Write("a", 0, 30), Write("b", 100, 20)});
  ds.SetThreadNum(2);
  ds.SetBatchSize(8);
  ds.LoadIntoMemory();
  ASSERT_EQ(ds.MemoryDataSize(), 50);
  EXPECT_EQ(ds.records().slots[0].int64s, std::vector<int64_t>(50, 7));
  const SlotColumns before = ds.records();
  ds.LocalShuffle(42);
  EXPECT_EQ(ds.MemoryDataSize(), 50);
  EXPECT_NE(ds.records().slots[1].int64s, before.slots[1].int64s);
  std::multiset<int64_t> a, b;
  for (int64_t r = 0; r < 50; ++r) {
    a.insert(before.slots[1].int64s[2 * r]);
    b.insert(ds.records().slots[1].int64s[2 * r]);
    // the label still belongs to its ids
    EXPECT_EQ(ds.records().slots[2].int64s[r], ds.records().slots[1].int64s[2 * r] % 2);
  }
  EXPECT_EQ(a, b);
  ASSERT_EQ(ds.BatchCount(), 7);
  EXPECT_EQ(ds.Batch(6).records(), 2);
  EXPECT_EQ(ds.Batch(1).slots[1].offsets, (std::vector<int64_t>{0, 2, 4, 6, 8, 10, 12, 14, 16}));
  EXPECT_THROW(ds.Batch(7), InvalidArgument);
  ds.ReleaseMemory();
  EXPECT_EQ(ds.MemoryDataSize(), 0);
  EXPECT_EQ(ds.BatchCount(), 0);
}

// Trainers as threads over one in-memory store: every record ends up on
// exactly one trainer, records move between trainers, labels stay with
// their ids; a second round works with the keys of the first gone.
TEST_F(DatasetTest, GlobalShuffleExchangesRecordsBetweenTrainers) {
  for (int world : {1, 2, 3}) {
    comm::HashStore store;
    std::vector<std::unique_ptr<Dataset>> trainers;
    for (int r = 0; r < world; ++r) {
      trainers.push_back(std::make_unique<Dataset>(DatasetKind::kInMemory));
      trainers[r]->SetUseVar(Slots());
      trainers[r]->SetFileList({Write("part-" + std::to_string(r), r * 1000, 40 + r)});
      trainers[r]->LoadIntoMemory();
    }
    for (const std::string round : {"shuffle/0", "shuffle/1"}) {
      std::vector<std::thread> threads;
      for (int r = 0; r < world; ++r) {
        threads.emplace_back([&, r] { trainers[r]->GlobalShuffle(store, r, world, 5, round); });
      }
      for (std::thread& t : threads) t.join();
      std::multiset<int64_t> all;
      bool moved = false;
      for (int r = 0; r < world; ++r) {
        const SlotColumns& c = trainers[r]->records();
        for (int64_t i = 0; i < c.records(); ++i) {
          const int64_t id = c.slots[0].int64s[c.slots[0].offsets[i]];
          EXPECT_EQ(c.slots[1].int64s[i], id % 2);
          moved = moved || id / 1000 != r;
        }
        const std::multiset<int64_t> ids = FirstIds(c);
        all.insert(ids.begin(), ids.end());
        EXPECT_EQ(trainers[r]->ShuffleDataSize(), c.records());
      }
      std::multiset<int64_t> expected;
      for (int r = 0; r < world; ++r) {
        for (int i = 0; i < 40 + r; ++i) expected.insert(r * 1000 + i);
      }
      EXPECT_EQ(all, expected) << world << " trainers, " << round;
      EXPECT_EQ(moved, world > 1) << world << " trainers, " << round;
      for (int r = 0; r < world; ++r) {
        for (int f = 0; f < world; ++f) EXPECT_FALSE(store.check({round + "/" + std::to_string(f) + "->" + std::to_string(r)}));
      }
    }
  }
  Dataset queue(DatasetKind::kQueue);
  comm::HashStore store;
  EXPECT_THROW(queue.GlobalShuffle(store, 0, 1, 1, "q"), InvalidArgument);
}

TEST_F(DatasetTest, PreloadThenWait) {
  Dataset ds(DatasetKind::kInMemory);
  ds.SetUseVar(Slots());
  ds.SetFileList({Write("a", 0, 5), Write("b", 5, 6)});
  ds.SetThreadNum(2);
  ds.PreloadIntoMemory();
  EXPECT_THROW(ds.LocalShuffle(1), InvalidArgument);
  ds.WaitPreloadDone();
  EXPECT_EQ(ds.MemoryDataSize(), 11);
  ds.SetFileList({WriteText("bad", "2 1 2 1 0\n2 1\n")});
  ds.PreloadIntoMemory();
  EXPECT_THROW(ds.WaitPreloadDone(), Corruption);
  EXPECT_EQ(ds.MemoryDataSize(), 11);  // a failed load keeps what was in memory
}

TEST_F(DatasetTest, MalformedLineNamesFileAndLine) {
  Dataset ds(DatasetKind::kInMemory);
  ds.SetUseVar(Slots());
  const std::string good = Write("good", 0, 3);
  const std::string bad = WriteText("bad", "2 1 2 1 0\n2 1 2 1 0 9\n");
  ds.SetFileList({good, bad});
  ds.SetThreadNum(2);
  EXPECT_NE(LoadError(&ds).find(bad + ":2: expected the end of the line after 2 slot(s), found '9'"), std::string::npos);
  ds.SetPipeCommand("cat -");
  EXPECT_NE(LoadError(&ds).find(bad + " (via 'cat -'):2: expected the end"), std::string::npos) << LoadError(&ds);
  // A command still writing when its output goes bad is stopped; the parse error stands.
  ds.SetFileList({good});
  ds.SetPipeCommand("cat; yes '1 1 1 x' | head -c 10000000");
  EXPECT_NE(LoadError(&ds).find(good + " (via 'cat; yes '1 1 1 x' | head -c 10000000'):4: slot 1 'label' (int64): value 0 of 1: expected an integer, found 'x'"),
            std::string::npos) << LoadError(&ds);
  EXPECT_EQ(ds.MemoryDataSize(), 0);
}

TEST_F(DatasetTest, FailingPipeCommandNamesStatusAndStderrTail) {
  Dataset ds(DatasetKind::kInMemory);
  ds.SetUseVar(Slots());
  ds.SetFileList({Write("a", 0, 3)});
  ds.SetPipeCommand("cat; for i in $(seq 1 2000); do echo noise $i >&2; done; echo 'reader: bad input' >&2; exit 3");
  const std::string error = LoadError(&ds);
  EXPECT_NE(error.find("pipe command"), std::string::npos) << error;
  EXPECT_NE(error.find("exited with status 3; its stderr ends:\n"), std::string::npos) << error;
  EXPECT_NE(error.find("noise 2000\nreader: bad input\n"), std::string::npos) << error;
  EXPECT_EQ(error.find("noise 1\n"), std::string::npos) << "only the tail";
  ds.SetPipeCommand("printf '2 1 2 1 0\\n3 1'; echo 'reader: crashed' >&2; exit 2");
  const std::string crashed = LoadError(&ds);
  EXPECT_NE(crashed.find("exited with status 2; its stderr ends:\nreader: crashed\n"), std::string::npos) << crashed;
  EXPECT_NE(crashed.find("(its output then failed to parse: "), std::string::npos) << crashed;
  EXPECT_NE(crashed.find(":2: slot 0 'ids' (int64): count 3 is more than"), std::string::npos) << crashed;
  ds.SetPipeCommand("kill -9 $$");
  EXPECT_NE(LoadError(&ds).find("was killed by signal 9"), std::string::npos) << LoadError(&ds);
  ds.SetPipeCommand("no_such_command_xyz");
  EXPECT_NE(LoadError(&ds).find("exited with status 127"), std::string::npos) << LoadError(&ds);
  ds.SetFileList({(dir_ / "missing").string()});
  EXPECT_THROW(ds.LoadIntoMemory(), NotFound);
}

TEST_F(DatasetTest, QueueDatasetStreamsBatches) {
  Dataset ds(DatasetKind::kQueue);
  ds.SetUseVar(Slots());
  ds.SetFileList({Write("a", 0, 10), Write("b", 10, 7), Write("c", 17, 0)});
  ds.SetThreadNum(2);
  ds.SetBatchSize(4);
  std::multiset<int64_t> ids;
  int batches = 0;
  ds.ForEachBatch([&](const SlotColumns& batch) {
    ++batches;
    EXPECT_LE(batch.records(), 4);
    for (int64_t id : FirstIds(batch)) ids.insert(id);
  });
  EXPECT_EQ(batches, 3 + 2);
  EXPECT_EQ(ids.size(), 17u);
  EXPECT_EQ(*ids.rbegin(), 16);
  EXPECT_EQ(ds.MemoryDataSize(), 0);
  EXPECT_THROW(ds.LoadIntoMemory(), InvalidArgument);
  EXPECT_THROW(ds.LocalShuffle(1), InvalidArgument);
  EXPECT_THROW(DatasetKindFromString("BoxPSDataset"), InvalidArgument);
}

// A file of several 1 MiB read chunks (through a pipe command too): the
// batches stream out as parsed, in file order, all full but the last.
TEST_F(DatasetTest, QueueBatchesStreamAcrossReadChunks) {
  const std::string big = Write("big", 0, 120000);  // ~2.6 MB
  for (const std::string command : {"cat", "sed 's/^/1 7 /'"}) {
    Dataset ds(DatasetKind::kQueue);
    ds.SetUseVar(command == "cat" ? Slots() : std::vector<SlotSpec>{{"tag"}, {"ids"}, {"label"}});
    ds.SetPipeCommand(command);
    ds.SetFileList({big});
    ds.SetBatchSize(1000 + 7);
    int64_t next = 0, batches = 0, short_batches = 0;
    ds.ForEachBatch([&](const SlotColumns& batch) {
      ++batches;
      short_batches += batch.records() < 1007;
      const SlotValues& ids = batch.slots[command == "cat" ? 0 : 1];
      for (int64_t r = 0; r < batch.records(); ++r) EXPECT_EQ(ids.int64s[ids.offsets[r]], next++);
    });
    EXPECT_EQ(next, 120000) << command;
    EXPECT_EQ(batches, (120000 + 1006) / 1007) << command;
    EXPECT_EQ(short_batches, 1) << command;
  }
}

TEST_F(DatasetTest, SettingsAreChecked) {
  Dataset ds(DatasetKind::kInMemory);
  EXPECT_THROW(ds.SetBatchSize(0), InvalidArgument);
  EXPECT_THROW(ds.SetThreadNum(0), InvalidArgument);
  EXPECT_THROW(ds.SetUseVar({}), InvalidArgument);
  ds.SetFileList({Write("a", 0, 1)});
  EXPECT_NE(LoadError(&ds).find("call set_use_var first"), std::string::npos);
}

TEST_F(DatasetTest, BatchesAsFeedsWithOffsets) {
  Dataset ds(DatasetKind::kInMemory);
  ds.SetUseVar({{"ids", SlotType::kInt64}, {"dense", SlotType::kFloat32, {-1, 2}}, {"label", SlotType::kInt64, {1}}});
  ds.SetFileList({WriteText("a", "3 1 2 3 2 0.5 1.5 1 0\n1 4 2 2.5 3.5 1 1\n")});
  ds.SetBatchSize(2);
  ds.LoadIntoMemory();
  const SlotFeeds feeds = ToFeeds(ds.Batch(0));
  const Tensor& ids = feeds.tensors.at("ids");
  EXPECT_EQ(ids.dims(), (Dims{4, 1}));
  EXPECT_EQ(ids.data<int64_t>()[3], 4);
  EXPECT_EQ(feeds.offsets.at("ids"), (std::vector<int64_t>{0, 3, 4}));
  EXPECT_EQ(feeds.tensors.at("dense").dims(), (Dims{2, 2}));
  EXPECT_EQ(feeds.tensors.at("dense").data<float>()[3], 3.5f);
  EXPECT_EQ(feeds.tensors.at("label").dims(), (Dims{2, 1}));
  EXPECT_EQ(feeds.offsets.count("dense"), 0u);

  ds.SetFileList({WriteText("b", "1 1 2 0.5 1.5 1 0\n1 4 1 2.5 1 1\n")});
  ds.LoadIntoMemory();
  try {
    ToFeeds(ds.Batch(0));
    ADD_FAILURE() << "a short dense record was fed";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("dense slot 'dense' of shape [-1, 2] expects 2 value(s) per record, "
                                         "record 1 of the batch holds 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flotilla::io
