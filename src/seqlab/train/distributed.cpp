// ProcessGroupGloo's header is compiled only with USE_C10D_GLOO (the Debian LibTorch is built
// with it); defined here, on the one file that needs it, so the precompiled header stays as is.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif

#include "seqlab/train/distributed.h"

#include "seqlab/core/error.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace seqlab {

namespace {

const std::string kPrefix = "seqlab/";

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  SEQLAB_CHECK(*end == '\0', "environment variable {}='{}' is not an integer", name, v);
  return x;
}

// The message of a LibTorch / Gloo exception without its C++ backtrace.
std::string short_what(const std::exception& e) {
  std::string s = e.what();
  if (auto* c = dynamic_cast<const c10::Error*>(&e)) s = c->what_without_backtrace();
  return s.substr(0, s.find('\n'));
}

std::vector<uint8_t> bytes(const std::string& s) {
  return {s.begin(), s.end()};
}
std::string text(const std::vector<uint8_t>& b) {
  return {b.begin(), b.end()};
}

bool loopback(const std::string& addr) {
  return addr == "localhost" || addr.rfind("127.", 0) == 0 || addr == "::1";
}

}  // namespace

DistConfig DistConfig::resolved() const {
  DistConfig c = *this;
  if (c.world_size == 0) c.world_size = env_int("WORLD_SIZE", 1);
  if (c.rank < 0) c.rank = env_int("RANK", 0);
  if (c.master_addr.empty()) {
    const char* a = std::getenv("MASTER_ADDR");
    c.master_addr = a && *a ? a : "127.0.0.1";
  }
  if (c.master_port == 0) c.master_port = env_int("MASTER_PORT", 29500);
  if (c.local_world_size == 0) c.local_world_size = env_int("LOCAL_WORLD_SIZE", 1);
  SEQLAB_CHECK(c.world_size >= 1, "--world-size must be >= 1, got {}", c.world_size);
  SEQLAB_CHECK(c.rank >= 0 && c.rank < c.world_size,
               "--rank must be in [0, --world-size {}), got {}", c.world_size, c.rank);
  SEQLAB_CHECK(c.master_port >= 1 && c.master_port <= 65535,
               "--master-port must be in [1, 65535], got {}", c.master_port);
  SEQLAB_CHECK(c.timeout > 0, "--dist-timeout must be positive, got {}", c.timeout);
  SEQLAB_CHECK(c.local_world_size >= 1 && c.local_world_size <= c.world_size,
               "LOCAL_WORLD_SIZE must be in [1, {}], got {}", c.world_size, c.local_world_size);
  return c;
}

struct DataParallel::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
};

DataParallel::DataParallel(const DistConfig& c) : impl_(std::make_unique<Impl>()) {
  rank_ = c.rank;
  world_ = c.world_size;
  local_ = c.local_world_size;
  timeout_ = c.timeout;
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(c.timeout * 1000));
  // c10d logs its own socket errors through glog before throwing; the exceptions below carry the
  // same facts in one line.
  FLAGS_minloglevel = std::max(FLAGS_minloglevel, 3);
  const std::string where = fmt::format("{}:{}", c.master_addr, c.master_port);

  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(c.master_port);
  o.isServer = rank_ == 0;
  o.waitWorkers = false;  // joining is checked below, with messages that say who is missing
  o.timeout = timeout;
  try {
    impl_->store = c10::make_intrusive<c10d::TCPStore>(c.master_addr, o);
  } catch (const std::exception& e) {
    if (rank_ == 0)
      fail("rank 0 cannot serve the rendezvous on {}: {} (is the port in use?)", where,
           short_what(e));
    fail(
        "rank {} cannot reach the master at {} within {} s: {} (is rank 0 running, and are "
        "--master-addr/--master-port right?)",
        rank_, where, c.timeout, short_what(e));
  }
  auto& store = *impl_->store;
  try {
    // Every rank announces itself once; rank 0 publishes the world size, each other rank checks
    // it and confirms (ok/<r>) or reports the mismatch (bad), and rank 0 waits for all of them.
    if (store.add(kPrefix + "rank/" + std::to_string(rank_), 1) > 1)
      fail("rank {} joined twice: two workers were given the same --rank", rank_);
    if (rank_ == 0) {
      store.set(kPrefix + "world", bytes(std::to_string(world_)));
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      for (;;) {
        if (store.check({kPrefix + "bad"})) fail("{}", text(store.get(kPrefix + "bad")));
        std::vector<int64_t> missing;
        for (int64_t r = 1; r < world_; ++r)
          if (!store.check({kPrefix + "ok/" + std::to_string(r)})) missing.push_back(r);
        if (missing.empty()) break;
        SEQLAB_CHECK(std::chrono::steady_clock::now() < deadline,
                     "only {} of {} workers joined at {} within {} s (missing rank{} {})",
                     world_ - static_cast<int64_t>(missing.size()), world_, where, c.timeout,
                     missing.size() > 1 ? "s" : "", fmt::join(missing, ", "));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    } else {
      const std::string theirs = text(store.get(kPrefix + "world"));
      if (theirs != std::to_string(world_)) {
        const std::string msg =
            fmt::format("world size mismatch: rank 0 has --world-size {}, rank {} has {}", theirs,
                        rank_, world_);
        store.set(kPrefix + "bad", bytes(msg));
        fail("{}", msg);
      }
      store.set(kPrefix + "ok/" + std::to_string(rank_), bytes("1"));  // rank 0 waits for this
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("rank {}: rendezvous at {} failed: {}", rank_, where, short_what(e));
  }

  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  try {
    if (ifname && *ifname)
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    else if (loopback(c.master_addr))
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    impl_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>(kPrefix + "gloo", impl_->store), rank_, world_,
        opts);
  } catch (const std::exception& e) {
    fail("rank {}: cannot connect the Gloo process group via {}: {}", rank_, where, short_what(e));
  }
}

DataParallel::~DataParallel() = default;

std::string DataParallel::share(const std::string& key, const std::string& value) {
  const std::string k = kPrefix + "share/" + key;
  try {
    if (rank_ == 0) {
      impl_->store->set(k, bytes("ok:" + value));
      return value;
    }
    const std::string v = text(impl_->store->get(k));
    if (v.rfind("ok:", 0) == 0) return v.substr(3);
    impl_->store->add(k + "/read", 1);  // rank 0 waits for this before it exits
    fail("rank 0 stopped: {}", v.substr(v.find(':') + 1));
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("rank {}: waiting for '{}' from rank 0 failed: {}", rank_, key, short_what(e));
  }
}

void DataParallel::publish_error(const std::string& key, const std::string& message) {
  if (rank_ != 0) return;
  try {
    const std::string k = kPrefix + "share/" + key;
    impl_->store->set(k, bytes("err:" + message));
    // The store lives in this process: wait (briefly) until every worker has read the message.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(std::min(timeout_, 5.0));
    while (impl_->store->add(k + "/read", 0) < world_ - 1 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } catch (const std::exception&) {
    // the others will see the connection close instead
  }
}

// Runs a collective and waits for it, turning a lost peer or a timeout into a seqlab::Error.
#define SEQLAB_COLLECTIVE(what, expr)                                                         \
  do {                                                                                        \
    try {                                                                                     \
      auto work = (expr);                                                                     \
      work->wait();                                                                           \
    } catch (const Error&) {                                                                  \
      throw;                                                                                  \
    } catch (const std::exception& e) {                                                       \
      throw CollectiveError(fmt::format(                                                      \
          "data-parallel rank {}: {} failed: {} (a worker exited, hung longer than {} s, or " \
          "the network failed)",                                                              \
          rank_, what, short_what(e), timeout_));                                             \
    }                                                                                         \
  } while (0)

void DataParallel::broadcast(const std::vector<torch::Tensor>& tensors) {
  for (const auto& t : tensors) {
    SEQLAB_CHECK(t.is_contiguous(), "broadcast: tensors must be contiguous");
    std::vector<at::Tensor> v{t};
    SEQLAB_COLLECTIVE("broadcast", impl_->pg->broadcast(v, c10d::BroadcastOptions{}));
  }
}

void DataParallel::allreduce_sum(const std::vector<torch::Tensor>& tensors, int64_t bucket_bytes) {
  // Buckets of consecutive tensors, flattened into one buffer each: one collective per bucket
  // instead of one per parameter. The bucket boundaries depend only on the shapes, so every rank
  // packs the same way.
  size_t i = 0;
  while (i < tensors.size()) {
    std::vector<torch::Tensor> flat;
    int64_t bytes_in = 0;
    size_t j = i;
    for (; j < tensors.size() && (j == i || bytes_in + tensors[j].numel() * 4 <= bucket_bytes);
         ++j) {
      SEQLAB_CHECK(tensors[j].scalar_type() == torch::kFloat,
                   "all-reduce: float32 tensors only, got {}",
                   c10::toString(tensors[j].scalar_type()));
      flat.push_back(tensors[j].reshape({-1}));
      bytes_in += tensors[j].numel() * 4;
    }
    std::vector<at::Tensor> buf{torch::cat(flat)};
    SEQLAB_COLLECTIVE("gradient all-reduce", impl_->pg->allreduce(buf, c10d::AllreduceOptions{}));
    int64_t off = 0;
    for (size_t k = i; k < j; ++k) {
      const int64_t n = tensors[k].numel();
      tensors[k].copy_(buf[0].narrow(0, off, n).view(tensors[k].sizes()));
      off += n;
    }
    i = j;
  }
}

std::vector<double> DataParallel::allreduce_values(std::vector<double> values) {
  auto t = torch::tensor(values, torch::kDouble);
  std::vector<at::Tensor> v{t};
  SEQLAB_COLLECTIVE("all-reduce", impl_->pg->allreduce(v, c10d::AllreduceOptions{}));
  auto a = t.accessor<double, 1>();
  for (size_t i = 0; i < values.size(); ++i) values[i] = a[static_cast<int64_t>(i)];
  return values;
}

void DataParallel::barrier() {
  SEQLAB_COLLECTIVE("barrier", impl_->pg->barrier(c10d::BarrierOptions{}));
}

#undef SEQLAB_COLLECTIVE

std::pair<int64_t, int64_t> shard_rows(int64_t batch, int64_t rank, int64_t world) {
  SEQLAB_CHECK(world >= 1 && rank >= 0 && rank < world, "shard_rows: rank {} of {}", rank, world);
  SEQLAB_CHECK(batch >= world, "--batch {} is smaller than the {} data-parallel workers", batch,
               world);
  return {batch * rank / world, batch * (rank + 1) / world};
}

Batch slice_rows(const Batch& b, int64_t begin, int64_t end) {
  auto cut = [&](const torch::Tensor& t) {
    return t.defined() ? t.slice(0, begin, end).contiguous() : t;
  };
  Batch s;
  s.input = cut(b.input);
  s.target = cut(b.target);
  s.mask = cut(b.mask);
  s.valid = cut(b.valid);
  s.soft = cut(b.soft);
  s.difficulty = cut(b.difficulty);
  return s;
}

int64_t scored_count(const Batch& b) {
  if (b.target.dim() == 1) return b.target.size(0);
  return b.mask.sum().item<int64_t>();
}

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  SEQLAB_CHECK(fd >= 0, "cannot open a socket to find a free port");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  SEQLAB_CHECK(ok, "cannot find a free TCP port on 127.0.0.1");
  return ntohs(a.sin_port);
}

}  // namespace seqlab
