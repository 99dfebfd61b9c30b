#include "node/tar_archive.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

namespace det::runtime {

namespace fs = std::filesystem;

namespace {

using archive_ptr = std::unique_ptr<archive, int (*)(archive*)>;
using entry_ptr = std::unique_ptr<archive_entry, void (*)(archive_entry*)>;

std::string reason(archive* a) {
  const char* text = archive_error_string(a);
  return text ? text : "libarchive gives no reason";
}

// The archive being packed, in memory up to the caller's limit: libarchive's write callback.
struct memory_sink {
  std::string bytes;
  std::size_t limit;
  bool over_limit = false;
};

la_ssize_t append(archive*, void* client, const void* buffer, size_t length) {
  auto& sink = *static_cast<memory_sink*>(client);
  if (sink.bytes.size() + length > sink.limit) {
    sink.over_limit = true;
    return -1;
  }
  sink.bytes.append(static_cast<const char*>(buffer), length);
  return static_cast<la_ssize_t>(length);
}

// Links to files are packed as the files; links to directories are not followed, so that a link
// cannot pack a directory twice, or forever.
std::vector<fs::path> entries_under(const std::string& dir) {
  std::vector<fs::path> entries;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (!(e.is_symlink() && e.is_directory())) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  return entries;
}

// The permissions an entry is unpacked with: no set-id or sticky bits, and directories the owner
// can always enter and write, so that the trial can write in them and they can be removed after.
void restrict_permissions(archive_entry* entry) {
  auto perm = archive_entry_perm(entry) & 0777;
  if (archive_entry_filetype(entry) == AE_IFDIR) perm |= 0700;
  archive_entry_set_perm(entry, perm);
}

} // namespace

std::string pack_directory(const std::string& dir, std::size_t max_bytes) {
  if (!fs::is_directory(dir)) throw std::runtime_error(dir + " is not a directory");
  const auto over_limit = [&] {
    return std::runtime_error("the model definition in " + dir + " is over " + std::to_string(max_bytes >> 20) +
                              " MiB; det takes at most that much: leave data sets and outputs out of it");
  };
  memory_sink sink{{}, max_bytes};
  archive_ptr out{archive_write_new(), archive_write_free};
  const auto failed = [&](const std::string& what) {
    if (sink.over_limit) return over_limit();
    return std::runtime_error("cannot pack " + what + " into the model definition archive: " + reason(out.get()));
  };
  // ustar headers, with pax records only where ustar falls short: names over 255 bytes, files
  // over 8 GiB, names that are not ASCII (kept as their bytes, marked hdrcharset=BINARY). No tape
  // blocking: the archive is a database value, not a tape.
  if (archive_write_set_format_pax_restricted(out.get()) != ARCHIVE_OK ||
      archive_write_set_bytes_per_block(out.get(), 0) != ARCHIVE_OK ||
      archive_write_open(out.get(), &sink, nullptr, append, nullptr) != ARCHIVE_OK)
    throw failed(dir);
  entry_ptr entry{archive_entry_new(), archive_entry_free};
  std::vector<char> buffer(std::size_t{1} << 16);
  for (const auto& path : entries_under(dir)) {
    const auto name = path.lexically_relative(dir).generic_string();
    const auto status = fs::status(path);
    const bool is_file = fs::is_regular_file(status);
    if (!is_file && !fs::is_directory(status)) continue;  // sockets, fifos, devices, dangling links
    const auto size = is_file ? fs::file_size(path) : 0;
    // Checked before reading, so that a large file is refused without reading it.
    if (sink.bytes.size() + size > max_bytes) throw over_limit();
    archive_entry_clear(entry.get());
    archive_entry_set_pathname(entry.get(), name.c_str());
    archive_entry_set_filetype(entry.get(), is_file ? AE_IFREG : AE_IFDIR);
    archive_entry_set_perm(entry.get(), static_cast<unsigned>(status.permissions()) & 0777u);
    archive_entry_set_size(entry.get(), static_cast<la_int64_t>(size));
    if (archive_write_header(out.get(), entry.get()) < ARCHIVE_WARN) throw failed(name);
    if (!is_file) continue;
    std::ifstream in(path, std::ios::binary);
    for (auto left = size; left > 0;) {
      in.read(buffer.data(), static_cast<std::streamsize>(std::min<std::uintmax_t>(left, buffer.size())));
      const auto got = in.gcount();
      if (got <= 0)
        throw std::runtime_error("cannot read " + path.string() + " whole for the model definition archive");
      if (archive_write_data(out.get(), buffer.data(), static_cast<size_t>(got)) != got) throw failed(name);
      left -= static_cast<std::uintmax_t>(got);
    }
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) throw failed("the archive's end");
  return std::move(sink.bytes);
}

void unpack_archive(const std::string& archive_bytes, const std::string& into) {
  fs::create_directories(into);
  // Without symbolic links: ARCHIVE_EXTRACT_SECURE_SYMLINKS refuses a path through any.
  const fs::path root = fs::canonical(into);
  archive_ptr in{archive_read_new(), archive_read_free};
  // Plain tar (ustar, pax, GNU), as packed by pack_directory, and the same gzip-compressed
  // (.tar.gz), as other tools make them.
  archive_read_support_format_tar(in.get());
  archive_read_support_filter_gzip(in.get());
  if (archive_read_open_memory(in.get(), archive_bytes.data(), archive_bytes.size()) != ARCHIVE_OK)
    throw std::runtime_error("the model definition archive cannot be read: " + reason(in.get()));
  archive_ptr out{archive_write_disk_new(), archive_write_free};
  // Entries land under `root` only: no ".." (NODOTDOT) and no path through a symbolic link
  // (SECURE_SYMLINKS). ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS cannot be used, since libarchive
  // extracts relative to the working directory and the worker, having threads, cannot change
  // it: entries are named by their absolute path under root, and an absolute entry name is
  // refused below instead. ARCHIVE_EXTRACT_PERM: permissions as packed (restrict_permissions),
  // not reduced by the umask.
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  std::string name;
  const auto refuse = [&](const std::string& why) {
    return std::runtime_error("the model definition archive names " + name + ", which cannot be unpacked into " +
                              root.string() + ": " + why);
  };
  for (;;) {
    archive_entry* entry = nullptr;
    const int read = archive_read_next_header(in.get(), &entry);
    if (read == ARCHIVE_EOF) break;
    if (read < ARCHIVE_WARN)
      throw std::runtime_error("the model definition archive is corrupt" +
                               (name.empty() ? std::string() : " after " + name) + ": " + reason(in.get()));
    const char* pathname = archive_entry_pathname(entry);
    name = pathname ? pathname : "";
    if (name.empty()) throw refuse("the entry has no name");
    // The directory itself, as `tar -C DIR .` names it ("./"): `into` keeps its own permissions.
    if (fs::path(name).lexically_normal() == ".") continue;
    const auto type = archive_entry_filetype(entry);
    if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
      throw refuse("it is neither a file, a directory nor a link");
    if (name.front() == '/') throw refuse("its path is absolute");
    archive_entry_set_pathname(entry, (root / name).c_str());
    if (const char* target = archive_entry_hardlink(entry)) {
      if (target[0] == '/') throw refuse("it links to an absolute path");
      archive_entry_set_hardlink(entry, (root / target).c_str());
    }
    restrict_permissions(entry);
    if (archive_write_header(out.get(), entry) < ARCHIVE_WARN) throw refuse(reason(out.get()));
    for (;;) {
      const void* block = nullptr;
      size_t size = 0;
      la_int64_t offset = 0;
      const int data = archive_read_data_block(in.get(), &block, &size, &offset);
      if (data == ARCHIVE_EOF) break;
      if (data < ARCHIVE_WARN)
        throw std::runtime_error("the model definition archive is corrupt in " + name + ": " + reason(in.get()));
      if (archive_write_data_block(out.get(), block, size, offset) < ARCHIVE_WARN)
        throw std::runtime_error("cannot write " + name + " from the model definition archive into " +
                                 root.string() + ": " + reason(out.get()));
    }
    if (archive_write_finish_entry(out.get()) < ARCHIVE_WARN)
      throw std::runtime_error("cannot write " + name + " from the model definition archive into " + root.string() +
                               ": " + reason(out.get()));
  }
  // Directories get their permissions here, once nothing more is written into them.
  if (archive_write_close(out.get()) != ARCHIVE_OK)
    throw std::runtime_error("cannot finish unpacking the model definition archive into " + root.string() + ": " +
                             reason(out.get()));
}

} // namespace det::runtime
