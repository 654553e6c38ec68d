#include "index/hnsw_graph.h"

// hnswlib's prefetches (USE_SSE) read the link after the last one of a full upper-level list,
// a few bytes past that list's allocation: AddressSanitizer reports it; no fault follows, the
// bytes only feed a prefetch hint. They are kept: without them (NO_MANUAL_VECTORIZATION) a graph
// search for 200 candidates among 50,000 vectors took 991 us against 758, and the 100,000-vector
// build 27.7 s against 25.5 (vector_bench, medians of three alternating runs). Under
// AddressSanitizer (scripts/sanitize.sh) they are compiled out, so its reports stay about Engram.
#if defined(__SANITIZE_ADDRESS__)
#define NO_MANUAL_VECTORIZATION
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_MANUAL_VECTORIZATION
#endif
#endif
#include <fcntl.h>
#include <hnswlib/hnswlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <utility>

#include "common/errno_status.h"
#include "common/posix_file.h"
#include "index/int8_vectors.h"

namespace engram {

namespace {

using Graph = hnswlib::HierarchicalNSW<float>;

// The .meta file's format; a file of another format is rebuilt, never read.
constexpr int kFormat = 2;
// The checksum is the sum (mod 2^64) of the hashes of the graph file's blocks of this size (the
// last one shorter), each seeded with its block number: writer and reader agree on it however they
// split their I/O, and zeroing one element rehashes only the blocks it lies in.
constexpr size_t kBlock = 1 << 20;

struct Int8SpaceParams {
  int dim;
};

float Int8CosineDistance(const void* a, const void* b, const void* param) {
  const int dim = static_cast<const Int8SpaceParams*>(param)->dim;
  float sa, sb;
  std::memcpy(&sa, a, sizeof(float));
  std::memcpy(&sb, b, sizeof(float));
  const auto* ca = static_cast<const int8_t*>(a) + sizeof(float);
  const auto* cb = static_cast<const int8_t*>(b) + sizeof(float);
  return 1.0f - sa * sb * static_cast<float>(DotInt8(ca, cb, dim));
}

class Int8Space final : public hnswlib::SpaceInterface<float> {
 public:
  explicit Int8Space(int dim) : params_{dim} {}
  size_t get_data_size() override { return ElementBytes(params_.dim); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return &Int8CosineDistance; }
  void* get_dist_func_param() override { return &params_; }

 private:
  Int8SpaceParams params_;
};

// 64-bit multiply-xor hash over 8-byte words (the tail padded with zeros), seeded with the length.
uint64_t Hash64(const void* data, size_t size, uint64_t seed) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed ^ (size * kMul);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ (w * kMul)) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  if (i < size) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, size - i);
    h = (h ^ (w * kMul)) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  h ^= h >> 29;
  h *= 0x94D049BB133111EBull;
  return h ^ (h >> 32);
}

// hnswlib's saveIndex header, field by field: what Save writes and Load checks before hnswlib's
// reader allocates by it.
struct __attribute__((packed)) GraphHeader {
  size_t offset_level0, max_elements, count, size_per_element, label_offset, offset_data;
  int max_level;
  hnswlib::tableint enter_point;
  size_t max_m, max_m0, m;
  double mult;
  size_t ef_construction;
};
static_assert(sizeof(GraphHeader) == 96);

// Whether `h` is the header of a graph of dimension `dim` and M `m` holding `elements` in a file
// of `size` bytes: hnswlib's reader allocates and indexes by these fields before anything else can
// check them, and an element's place in the file is computed from them.
bool HeaderFits(const GraphHeader& h, size_t m, int dim, uint64_t elements, uint64_t size) {
  const size_t level0_links = 2 * m * sizeof(hnswlib::tableint) + sizeof(hnswlib::linklistsizeint);
  const size_t per_element = level0_links + ElementBytes(dim) + sizeof(hnswlib::labeltype);
  return h.count == elements && h.max_elements == elements && h.offset_level0 == 0 &&
         h.offset_data == level0_links && h.label_offset == level0_links + ElementBytes(dim) &&
         h.size_per_element == per_element && h.max_m == m && h.max_m0 == 2 * m && h.m == m &&
         elements < (uint64_t{1} << 32) && elements * per_element + sizeof(h) <= size;
}

// Writes a file through a block buffer, checksumming each full block (and the last) as it goes.
class BlockWriter {
 public:
  explicit BlockWriter(int fd) : fd_(fd) { buf_.reserve(kBlock); }
  void Write(const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0 && status_.ok()) {
      const size_t n = std::min(size, kBlock - buf_.size());
      buf_.insert(buf_.end(), p, p + n);
      p += n;
      size -= n;
      if (buf_.size() == kBlock) Flush();
    }
  }
  template <typename T>
  void Pod(const T& v) {
    Write(&v, sizeof(T));
  }
  Status Finish() {
    if (!buf_.empty()) Flush();
    return status_;
  }
  uint64_t checksum() const { return checksum_; }
  uint64_t bytes() const { return bytes_; }

 private:
  void Flush() {
    checksum_ += Hash64(buf_.data(), buf_.size(), blocks_++);
    size_t done = 0;
    while (done < buf_.size() && status_.ok()) {
      const ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        status_ = ErrnoStatus("cannot write the vector graph", n < 0 ? errno : ENOSPC);
        break;
      }
      done += static_cast<size_t>(n);
    }
    bytes_ += buf_.size();
    buf_.clear();
  }

  int fd_;
  std::vector<char> buf_;
  uint64_t checksum_ = 0;
  uint64_t blocks_ = 0;
  uint64_t bytes_ = 0;
  Status status_;
};

// Reads `size` bytes at `offset` (short only at the end of the file: an error then).
Status ReadAt(int fd, char* out, size_t size, uint64_t offset) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(fd, out + got, size - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Internal("vector graph file shorter than its record");
    got += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// The checksum of `fd`'s whole content, as BlockWriter computes it.
Result<uint64_t> ChecksumFile(int fd, uint64_t size) {
  std::vector<char> buf(kBlock);
  uint64_t checksum = 0, done = 0;
  while (done < size) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kBlock, size - done));
    ENGRAM_RETURN_IF_ERROR(ReadAt(fd, buf.data(), want, done));
    checksum += Hash64(buf.data(), want, done / kBlock);
    done += want;
  }
  return checksum;
}

// The saved graph's record (`<path>.meta`), or NotFound; an unreadable one is an empty object.
Result<nlohmann::json> ReadRecord(const std::string& path) {
  std::ifstream in(path + ".meta");
  if (!in) return Status::NotFound("no saved vector graph");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json record = nlohmann::json::parse(text.str(), nullptr, false);
  if (!record.is_object()) record = nlohmann::json::object();
  return record;
}

// A record's unsigned field, UINT64_MAX when absent or of another type.
uint64_t RecordField(const nlohmann::json& record, const char* key) {
  const auto it = record.find(key);
  return it != record.end() && it->is_number_unsigned() ? it->get<uint64_t>() : UINT64_MAX;
}

Status WriteSmallFile(const std::string& path, const std::string& text) {
  UniqueFd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!out.valid()) return ErrnoStatus("cannot create " + path, errno);
  BlockWriter w(out.get());
  w.Write(text.data(), text.size());
  return w.Finish();
}

}  // namespace

Result<uint64_t> GraphFileChecksum(const std::string& path) {
  UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!in.valid() || ::fstat(in.get(), &st) != 0) return ErrnoStatus("cannot read " + path, errno);
  return ChecksumFile(in.get(), static_cast<uint64_t>(st.st_size));
}

void PackElement(char* out, float scale, const int8_t* code, int dim) {
  std::memcpy(out, &scale, sizeof(float));
  std::memcpy(out + sizeof(float), code, static_cast<size_t>(dim));
}

uint64_t ElementHash(const char* element, int dim) { return Hash64(element, ElementBytes(dim), 0); }

struct HnswGraph::Impl {
  Impl(const HnswGraphOptions& o, size_t capacity)
      : space(o.dim),
        graph(&space, capacity, static_cast<size_t>(o.m), static_cast<size_t>(o.ef_construction)) {}
  // A graph loaded from `location` (hnswlib's reader).
  Impl(const HnswGraphOptions& o, const std::string& location, size_t capacity)
      : space(o.dim), graph(&space, location, false, capacity) {}

  Int8Space space;
  Graph graph;
};

HnswGraph::HnswGraph(const HnswGraphOptions& options, size_t capacity)
    : impl_(std::make_unique<Impl>(options, capacity)) {
  impl_->graph.setEf(static_cast<size_t>(options.ef_search));
}

HnswGraph::HnswGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HnswGraph::~HnswGraph() = default;

void HnswGraph::Reserve(size_t more) {
  Graph& g = impl_->graph;
  const size_t need = g.cur_element_count + more;
  if (need <= g.max_elements_) return;
  g.resizeIndex(std::max(need + need / 8, g.max_elements_ * 2));
}

void HnswGraph::Add(const char* element, DocId doc) { impl_->graph.addPoint(element, doc); }

void HnswGraph::Remove(DocId doc) {
  try {
    impl_->graph.markDelete(doc);
  } catch (const std::exception&) {
    // Not in the graph (never added or already deleted): nothing to do.
  }
}

std::vector<ScoredDoc> HnswGraph::Search(const char* element, size_t k) const {
  auto pq = impl_->graph.searchKnn(element, k);
  std::vector<ScoredDoc> out(pq.size());
  for (size_t i = pq.size(); i-- > 0;) {
    out[i] = {static_cast<DocId>(pq.top().second), 1.0f - pq.top().first};
    pq.pop();
  }
  return out;
}

size_t HnswGraph::MemoryBytes() const {
  const Graph& g = impl_->graph;
  return g.max_elements_ * g.size_data_per_element_ + g.cur_element_count * sizeof(void*);
}

size_t HnswGraph::elements() const { return impl_->graph.cur_element_count; }

bool HnswGraph::deleted(size_t i) const {
  return impl_->graph.isMarkedDeleted(static_cast<hnswlib::tableint>(i));
}

const char* HnswGraph::element(size_t i) const {
  return impl_->graph.getDataByInternalId(static_cast<hnswlib::tableint>(i));
}

void HnswGraph::Relabel(const std::vector<DocId>& labels) {
  Graph& g = impl_->graph;
  g.label_lookup_.clear();
  g.label_lookup_.reserve(labels.size());
  for (size_t i = 0; i < labels.size() && i < g.cur_element_count; ++i) {
    const auto id = static_cast<hnswlib::tableint>(i);
    if (labels[i] == kNoDoc) {
      // A label no DocId can take, so a later Add of any doc never lands on this element.
      g.setExternalLabel(id, (hnswlib::labeltype{1} << 40) + i);
      if (!g.isMarkedDeleted(id)) g.markDeletedInternal(id);
      continue;
    }
    g.setExternalLabel(id, labels[i]);
    g.label_lookup_[labels[i]] = id;
    if (g.isMarkedDeleted(id)) g.unmarkDeletedInternal(id);
  }
}

Status HnswGraph::Save(const std::string& path) const {
  const Graph& g = impl_->graph;
  const size_t n = g.cur_element_count;
  // What the file will take: hnswlib's header, the level-0 block, and each element's upper links.
  uint64_t expected = sizeof(GraphHeader) + static_cast<uint64_t>(n) * g.size_data_per_element_;
  for (size_t i = 0; i < n; ++i) {
    expected += sizeof(unsigned int) +
                (g.element_levels_[i] > 0 ? g.size_links_per_element_ * g.element_levels_[i] : 0);
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) == 0 &&
      static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < 2 * expected) {
    return Status::Unavailable("too little free space to keep the vector graph");
  }

  // Fixed temporary names: a save cut short by a crash leaves files the next save replaces. Two
  // saves of one scope at once (never by one index) could mix their halves; the reader's checks
  // then refuse the pair. Neither the record nor the directory is synced: a record lost in a
  // crash only means building the graph anew.
  const std::string tmp = path + ".tmp", meta_tmp = path + ".meta.tmp";
  Status st;
  uint64_t checksum = 0, bytes = 0;
  {
    UniqueFd out(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!out.valid()) return ErrnoStatus("cannot create the vector graph file", errno);
    BlockWriter w(out.get());
    // The capacity written is the element count, the reader choosing its own.
    w.Pod(GraphHeader{.offset_level0 = g.offsetLevel0_,
                      .max_elements = n,
                      .count = n,
                      .size_per_element = g.size_data_per_element_,
                      .label_offset = g.label_offset_,
                      .offset_data = g.offsetData_,
                      .max_level = g.maxlevel_,
                      .enter_point = g.enterpoint_node_,
                      .max_m = g.maxM_,
                      .max_m0 = g.maxM0_,
                      .m = g.M_,
                      .mult = g.mult_,
                      .ef_construction = g.ef_construction_});
    // Level 0, element by element, deleted elements' codes zeroed (their links stay: the graph
    // still routes through them).
    std::vector<char> scratch(g.size_data_per_element_);
    for (size_t i = 0; i < n; ++i) {
      const char* at = g.data_level0_memory_ + i * g.size_data_per_element_;
      if (!g.isMarkedDeleted(static_cast<hnswlib::tableint>(i))) {
        w.Write(at, g.size_data_per_element_);
        continue;
      }
      std::memcpy(scratch.data(), at, g.size_data_per_element_);
      std::memset(scratch.data() + g.offsetData_, 0, g.data_size_);
      w.Write(scratch.data(), scratch.size());
    }
    for (size_t i = 0; i < n; ++i) {
      const unsigned int size =
          g.element_levels_[i] > 0
              ? static_cast<unsigned int>(g.size_links_per_element_ *
                                          static_cast<size_t>(g.element_levels_[i]))
              : 0;
      w.Pod(size);
      if (size > 0) w.Write(g.linkLists_[i], size);
    }
    st = w.Finish();
    if (st.ok() && ::fsync(out.get()) != 0) st = ErrnoStatus("cannot sync the vector graph", errno);
    checksum = w.checksum();
    bytes = w.bytes();
  }
  if (st.ok() && bytes != expected) st = Status::Internal("vector graph file of unexpected size");
  if (st.ok()) {
    nlohmann::json meta = {
        {"format", kFormat},   {"dim", static_cast<int>(g.data_size_ - sizeof(float))},
        {"m", g.M_},           {"ef_construction", g.ef_construction_},
        {"elements", n},       {"bytes", bytes},
        {"checksum", checksum}};
    st = WriteSmallFile(meta_tmp, meta.dump());
  }
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = ErrnoStatus("cannot rename the vector graph file", errno);
  }
  if (st.ok() && ::rename(meta_tmp.c_str(), (path + ".meta").c_str()) != 0) {
    st = ErrnoStatus("cannot rename the vector graph record", errno);
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    ::unlink(meta_tmp.c_str());
  }
  return st;
}

void HnswGraph::RemoveSaved(const std::string& path) {
  if (path.empty()) return;
  for (const std::string& file : {path, path + ".tmp", path + ".meta", path + ".meta.tmp"}) {
    // Overwritten with zeros before it goes, as the database overwrites deleted rows: the codes
    // are derived from memories that are being deleted.
    // Not through a symbolic link (the file elsewhere is not the graph's), never blocking on a
    // FIFO.
    UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    struct stat st {};
    if (fd.valid() && ::fstat(fd.get(), &st) == 0 && st.st_size > 0) {
      BlockWriter zeros(fd.get());
      const std::vector<char> block(std::min<uint64_t>(kBlock, static_cast<uint64_t>(st.st_size)));
      for (uint64_t left = static_cast<uint64_t>(st.st_size); left > 0;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(left, block.size()));
        zeros.Write(block.data(), n);
        left -= n;
      }
      if (zeros.Finish().ok()) (void)::fdatasync(fd.get());
    }
    ::unlink(file.c_str());
  }
}

Status HnswGraph::ZeroSavedElements(const std::string& path, std::vector<size_t> elements) {
  if (elements.empty()) return Status::Ok();
  std::sort(elements.begin(), elements.end());
  elements.erase(std::unique(elements.begin(), elements.end()), elements.end());
  auto record = ReadRecord(path);
  if (!record.ok()) return record.status();
  const uint64_t dim = RecordField(*record, "dim"), m = RecordField(*record, "m");
  if (RecordField(*record, "format") != kFormat || dim == 0 || dim > (1u << 16) || m == 0 ||
      m > (1u << 16)) {
    return Status::InvalidParameter("saved vector graph of another format");
  }
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("cannot open the saved vector graph", errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus("cannot stat the saved vector graph", errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  GraphHeader h{};
  ENGRAM_RETURN_IF_ERROR(ReadAt(fd.get(), reinterpret_cast<char*>(&h), sizeof(h), 0));
  const uint64_t code_bytes = ElementBytes(static_cast<int>(dim));
  if (size != RecordField(*record, "bytes") ||
      !HeaderFits(h, m, static_cast<int>(dim), RecordField(*record, "elements"), size) ||
      elements.back() >= h.count) {
    return Status::InvalidParameter("saved vector graph does not match its record");
  }
  // Each block holding an element's [scale][code] is read once, its hash taken out of the
  // checksum, the codes in it zeroed, its new hash put in, and the block written back.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end) in the file, ascending
  ranges.reserve(elements.size());
  for (const size_t e : elements) {
    const uint64_t begin = sizeof(h) + e * h.size_per_element + h.offset_data;
    ranges.emplace_back(begin, begin + code_bytes);
  }
  uint64_t checksum = RecordField(*record, "checksum");
  std::vector<char> buf(kBlock);
  size_t r = 0;  // the first range not wholly zeroed yet
  for (uint64_t b = ranges[0].first / kBlock; r < ranges.size();) {
    const uint64_t at = b * kBlock;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kBlock, size - at));
    ENGRAM_RETURN_IF_ERROR(ReadAt(fd.get(), buf.data(), n, at));
    checksum -= Hash64(buf.data(), n, b);
    for (size_t k = r; k < ranges.size() && ranges[k].first < at + n; ++k) {
      const uint64_t from = std::max(ranges[k].first, at), to = std::min(ranges[k].second, at + n);
      if (from < to) std::memset(buf.data() + (from - at), 0, static_cast<size_t>(to - from));
    }
    checksum += Hash64(buf.data(), n, b);
    for (size_t done = 0; done < n;) {
      const ssize_t w =
          ::pwrite(fd.get(), buf.data() + done, n - done, static_cast<off_t>(at + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return ErrnoStatus("cannot write the saved vector graph", w < 0 ? errno : ENOSPC);
      done += static_cast<size_t>(w);
    }
    while (r < ranges.size() && ranges[r].second <= at + n) ++r;
    if (r < ranges.size()) b = std::max(b + 1, ranges[r].first / kBlock);
  }
  (*record)["checksum"] = checksum;
  const std::string meta_tmp = path + ".meta.tmp";
  Status written = WriteSmallFile(meta_tmp, record->dump());
  if (written.ok() && ::rename(meta_tmp.c_str(), (path + ".meta").c_str()) != 0) {
    written = ErrnoStatus("cannot rename the vector graph record", errno);
  }
  if (!written.ok()) ::unlink(meta_tmp.c_str());
  return written;
}

std::optional<size_t> HnswGraph::ElementOf(DocId doc) {
  Graph& g = impl_->graph;
  // addPoint changes the map under this lock; Add may run beside this call.
  std::unique_lock<std::mutex> lock(g.cur_element_count_guard_);
  const auto it = g.label_lookup_.find(doc);
  if (it == g.label_lookup_.end()) return std::nullopt;
  return static_cast<size_t>(it->second);
}

Result<std::unique_ptr<HnswGraph>> HnswGraph::Load(const std::string& path,
                                                   const HnswGraphOptions& options,
                                                   size_t capacity) {
  auto record = ReadRecord(path);
  if (!record.ok()) return record.status();
  auto field = [&record](const char* key) { return RecordField(*record, key); };
  if (field("format") != kFormat || field("dim") != static_cast<uint64_t>(options.dim) ||
      field("m") != static_cast<uint64_t>(options.m) ||
      field("ef_construction") !=
          static_cast<uint64_t>(std::max(options.ef_construction, options.m))) {
    return Status::InvalidParameter("saved vector graph of another format or parameters");
  }
  // One descriptor for the checks and hnswlib's reader (by its /proc path), so a file renamed into
  // place meanwhile cannot pass the checks in place of the one read.
  UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return ErrnoStatus("cannot open the saved vector graph", errno);
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return ErrnoStatus("cannot stat the saved vector graph", errno);
  const uint64_t elements = field("elements");
  if (static_cast<uint64_t>(st.st_size) != field("bytes") || elements == 0 ||
      elements >= (uint64_t{1} << 32)) {
    return Status::InvalidParameter("saved vector graph of another size than its record");
  }
  // hnswlib's reader allocates and indexes by the header's fields before anything can check
  // them, and takes its layout from them as they are: each must be what a graph of `options`
  // holding `elements` has.
  GraphHeader h{};
  if (!ReadAt(in.get(), reinterpret_cast<char*>(&h), sizeof(h), 0).ok() ||
      !HeaderFits(h, static_cast<size_t>(options.m), options.dim, elements,
                  static_cast<uint64_t>(st.st_size))) {
    return Status::InvalidParameter("saved vector graph header does not match its record");
  }
  auto checksum = ChecksumFile(in.get(), static_cast<uint64_t>(st.st_size));
  if (!checksum.ok()) return checksum.status();
  if (*checksum != field("checksum")) {
    return Status::InvalidParameter("saved vector graph checksum does not match");
  }
  std::unique_ptr<HnswGraph> graph;
  try {
    auto impl = std::make_unique<Impl>(options, "/proc/self/fd/" + std::to_string(in.get()),
                                       std::max<size_t>(capacity, elements));
    graph.reset(new HnswGraph(std::move(impl)));
  } catch (const std::exception& e) {
    return Status::InvalidParameter(std::string("saved vector graph unreadable: ") + e.what());
  }
  Graph& g = graph->impl_->graph;
  // hnswlib's reader counts deleted elements into a field it never zeroes, and takes the level
  // distribution from the file: both are set here from what is known.
  g.num_deleted_ = 0;
  for (size_t i = 0; i < g.cur_element_count; ++i) {
    if (g.isMarkedDeleted(static_cast<hnswlib::tableint>(i))) ++g.num_deleted_;
  }
  g.mult_ = 1 / std::log(static_cast<double>(g.M_));
  g.revSize_ = 1.0 / g.mult_;
  Status checked = graph->CheckLoaded();
  if (!checked.ok()) return checked;
  g.setEf(static_cast<size_t>(options.ef_search));
  return graph;
}

Status HnswGraph::CheckLoaded() const {
  const Graph& g = impl_->graph;
  const size_t n = g.cur_element_count;
  if (n > 0 && (g.enterpoint_node_ >= n || g.maxlevel_ < 0 ||
                g.element_levels_[g.enterpoint_node_] != g.maxlevel_)) {
    return Status::InvalidParameter("saved vector graph has no valid entry point");
  }
  auto links_ok = [&](const hnswlib::linklistsizeint* list, size_t max) {
    const size_t count = g.getListCount(const_cast<hnswlib::linklistsizeint*>(list));
    if (count > max) return false;
    const auto* links = reinterpret_cast<const hnswlib::tableint*>(list + 1);
    for (size_t j = 0; j < count; ++j) {
      if (links[j] >= n) return false;
    }
    return true;
  };
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<hnswlib::tableint>(i);
    if (g.element_levels_[i] > g.maxlevel_ || !links_ok(g.get_linklist0(id), g.maxM0_)) {
      return Status::InvalidParameter("saved vector graph has links out of range");
    }
    for (int level = 1; level <= g.element_levels_[i]; ++level) {
      if (!links_ok(g.get_linklist(id, level), g.maxM_)) {
        return Status::InvalidParameter("saved vector graph has links out of range");
      }
    }
  }
  return Status::Ok();
}

}  // namespace engram
