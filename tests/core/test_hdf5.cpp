// The HDF5 result-file writer: contents read back with the HDF5 C API, the
// temporary-then-rename protocol, and its errors.
#include <ebla/core/hdf5.hpp>
#include <ebla/core/temporary.hpp>

#include <gtest/gtest.h>
#include <hdf5.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// A fresh scratch directory per test, removed afterwards.
class hdf5 : public ::testing::Test {  // lower case: `ctest -R hdf5` selects these
protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("ebla_test_hdf5_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// ---- reading back, with the C API only --------------------------------------------

struct Handle {  // closes an HDF5 identifier (tests only: no error handling)
  hid_t id;
  herr_t (*close)(hid_t);
  ~Handle() {
    if (id >= 0) close(id);
  }
};

std::string read_string_attribute(hid_t obj, const char* name) {
  Handle attr{H5Aopen(obj, name, H5P_DEFAULT), H5Aclose};
  Handle type{H5Aget_type(attr.id), H5Tclose};
  EXPECT_GT(H5Tis_variable_str(type.id), 0) << name;
  Handle mem{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(mem.id, H5T_VARIABLE);
  H5Tset_cset(mem.id, H5T_CSET_UTF8);
  char* text = nullptr;
  EXPECT_GE(H5Aread(attr.id, mem.id, &text), 0) << name;
  std::string s = text != nullptr ? text : "";
  H5free_memory(text);
  return s;
}

template <class T>
std::vector<T> read_attribute(hid_t obj, const char* name, hid_t mem_type) {
  Handle attr{H5Aopen(obj, name, H5P_DEFAULT), H5Aclose};
  Handle space{H5Aget_space(attr.id), H5Sclose};
  std::vector<T> v(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space.id)));
  if (!v.empty()) {
    EXPECT_GE(H5Aread(attr.id, mem_type, v.data()), 0) << name;
  }
  return v;
}

template <class T>
std::vector<T> read_dataset(hid_t file, const char* path, hid_t mem_type, std::vector<hsize_t>* dims = nullptr) {
  Handle set{H5Dopen2(file, path, H5P_DEFAULT), H5Dclose};
  EXPECT_GE(set.id, 0) << path;
  Handle space{H5Dget_space(set.id), H5Sclose};
  if (dims != nullptr) {
    dims->assign(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space.id)), 0);
    H5Sget_simple_extent_dims(space.id, dims->data(), nullptr);
  }
  std::vector<T> v(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space.id)));
  if (!v.empty()) {
    EXPECT_GE(H5Dread(set.id, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0) << path;
  }
  return v;
}

TEST_F(hdf5, WritesWhatReadsBack) {
  const std::string path = file("run.h5");
  {
    ebla::Hdf5Writer out(path);
    const ebla::Hdf5Group root = out.root();
    root.attribute("ebla_version", std::string("0.1.0")).attribute("command", "qdot");
    const ebla::Hdf5Group g = root.group("tightness");
    g.attribute("tolerance", 1e-16).attribute("samples", std::int64_t{5}).attribute("seed", 7);
    g.attribute("sizes", std::vector<std::int64_t>{100, 1000, 10000});
    g.attribute("tolerances", std::vector<double>{1e-15, 1e-8});
    g.attribute("nothing", std::vector<double>{});
    const ebla::Hdf5Group a = g.group("A");
    a.dataset("relerr", std::vector<double>{0.5, -1.25, 3e-300}).attribute("unit", "relative");
    a.dataset("n", std::vector<std::int64_t>{100, -2, std::int64_t{1} << 40});
    a.dataset("levels", std::vector<double>{1, 2, 3, 4, 5, 6}, 2, 3);
    a.dataset("map", std::vector<std::uint8_t>{0, 1, 2, 3, 255, 7}, 3, 2);
    a.dataset("empty", std::vector<double>{});
    EXPECT_EQ(a.path(), "/tightness/A");
    out.commit();
    EXPECT_TRUE(out.committed());
  }
  Handle f{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  ASSERT_GE(f.id, 0);
  EXPECT_EQ(read_string_attribute(f.id, "ebla_version"), "0.1.0");
  EXPECT_EQ(read_string_attribute(f.id, "command"), "qdot");
  Handle g{H5Gopen2(f.id, "/tightness", H5P_DEFAULT), H5Gclose};
  EXPECT_EQ(read_attribute<double>(g.id, "tolerance", H5T_NATIVE_DOUBLE), std::vector<double>{1e-16});
  EXPECT_EQ(read_attribute<std::int64_t>(g.id, "samples", H5T_NATIVE_INT64), std::vector<std::int64_t>{5});
  EXPECT_EQ(read_attribute<std::int64_t>(g.id, "seed", H5T_NATIVE_INT64), std::vector<std::int64_t>{7});
  EXPECT_EQ(read_attribute<std::int64_t>(g.id, "sizes", H5T_NATIVE_INT64),
            (std::vector<std::int64_t>{100, 1000, 10000}));
  EXPECT_EQ(read_attribute<double>(g.id, "tolerances", H5T_NATIVE_DOUBLE), (std::vector<double>{1e-15, 1e-8}));
  EXPECT_TRUE(read_attribute<double>(g.id, "nothing", H5T_NATIVE_DOUBLE).empty());

  EXPECT_EQ(read_dataset<double>(f.id, "/tightness/A/relerr", H5T_NATIVE_DOUBLE),
            (std::vector<double>{0.5, -1.25, 3e-300}));
  EXPECT_EQ(read_dataset<std::int64_t>(f.id, "/tightness/A/n", H5T_NATIVE_INT64),
            (std::vector<std::int64_t>{100, -2, std::int64_t{1} << 40}));
  std::vector<hsize_t> dims;
  EXPECT_EQ(read_dataset<double>(f.id, "/tightness/A/levels", H5T_NATIVE_DOUBLE, &dims),
            (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(dims, (std::vector<hsize_t>{2, 3}));
  EXPECT_EQ(read_dataset<std::uint8_t>(f.id, "/tightness/A/map", H5T_NATIVE_UINT8, &dims),
            (std::vector<std::uint8_t>{0, 1, 2, 3, 255, 7}));
  EXPECT_EQ(dims, (std::vector<hsize_t>{3, 2}));
  {
    Handle map{H5Dopen2(f.id, "/tightness/A/map", H5P_DEFAULT), H5Dclose};
    Handle map_type{H5Dget_type(map.id), H5Tclose};
    EXPECT_GT(H5Tequal(map_type.id, H5T_STD_U8LE), 0);
  }
  EXPECT_TRUE(read_dataset<double>(f.id, "/tightness/A/empty", H5T_NATIVE_DOUBLE, &dims).empty());
  EXPECT_EQ(dims, (std::vector<hsize_t>{0}));
  Handle rel{H5Dopen2(f.id, "/tightness/A/relerr", H5P_DEFAULT), H5Dclose};
  EXPECT_EQ(read_string_attribute(rel.id, "unit"), "relative");
  // stored as standard little-endian types, whatever the host
  Handle type{H5Dget_type(rel.id), H5Tclose};
  EXPECT_GT(H5Tequal(type.id, H5T_IEEE_F64LE), 0);
}

TEST_F(hdf5, WritesUnderATemporaryNameUntilCommit) {
  const std::string path = file("result.h5");
  ebla::Hdf5Writer out(path);
  EXPECT_EQ(out.path(), path);
  const std::string stem = path + ".tmp-" + std::to_string(::getpid()) + "-";  // then six random letters
  ASSERT_EQ(out.temporary_path().size(), stem.size() + 6);
  EXPECT_EQ(out.temporary_path().substr(0, stem.size()), stem);
  EXPECT_EQ(out.temporary_path().find_first_not_of("abcdefghijklmnopqrstuvwxyz", stem.size()), std::string::npos);
  out.root().group("g").dataset("v", std::vector<double>{1, 2});
  EXPECT_TRUE(fs::exists(out.temporary_path()));
  EXPECT_FALSE(fs::exists(path));
  out.commit();
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(out.temporary_path()));
  EXPECT_GT(H5Fis_hdf5(path.c_str()), 0);
}

// A link planted where the temporary file would go (the old name <path>.tmp-<pid>, a
// symbolic link to a file of the user's) is neither followed nor truncated, and the output
// is a regular file of its own, not the link's target.
TEST_F(hdf5, ALinkPlantedAtTheTemporaryNameIsNeitherFollowedNorTruncated) {
  const std::string path = file("out.h5"), victim = file("victim.txt");
  std::ofstream(victim) << "keep me\n";
  const std::string planted = path + ".tmp-" + std::to_string(::getpid());
  fs::create_symlink(victim, planted);
  {
    ebla::Hdf5Writer out(path);
    EXPECT_NE(out.temporary_path(), planted);
    EXPECT_FALSE(fs::is_symlink(out.temporary_path()));
    out.root().group("g").dataset("v", std::vector<double>{1, 2});
    out.commit();
  }
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(path)));
  EXPECT_GT(H5Fis_hdf5(path.c_str()), 0);
  std::ifstream in(victim);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "keep me");
  EXPECT_TRUE(fs::is_symlink(planted));  // left as it was
}

// Two writers of one target in one process: two temporary files, each created new.
TEST_F(hdf5, EveryWriterCreatesATemporaryFileOfItsOwn) {
  const std::string path = file("twice.h5");
  ebla::Hdf5Writer a(path), b(path);
  EXPECT_NE(a.temporary_path(), b.temporary_path());
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(a.temporary_path())));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(b.temporary_path())));
  std::string name;
  const int fd = ebla::detail::create_temporary(path, name);
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_EQ(fs::file_size(name), 0u);
  fs::remove(name);
}

TEST_F(hdf5, LeavesNoFileWithoutCommit) {
  const std::string path = file("abandoned.h5");
  std::string temporary;
  {
    ebla::Hdf5Writer out(path);
    temporary = out.temporary_path();
    out.root().attribute("x", 1.0);
    out.root().group("g").dataset("v", std::vector<double>(1000, 1.0));
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(temporary));
  EXPECT_TRUE(fs::is_empty(dir_));
}

// What a signal handler of SIGINT/SIGTERM calls: the temporaries of the open writers go,
// a committed file and the writers' other files stay.
TEST_F(hdf5, RemovePendingTemporariesRemovesOnlyOpenWritersTemporaries) {
  const std::string kept = file("kept.h5"), open = file("open.h5");
  ebla::Hdf5Writer done(kept);
  done.root().attribute("x", 1.0);
  done.commit();
  ebla::Hdf5Writer writing(open);
  writing.root().group("g").dataset("v", std::vector<double>(100, 1.0));
  ASSERT_TRUE(fs::exists(writing.temporary_path()));
  ebla::remove_pending_temporaries();
  EXPECT_FALSE(fs::exists(writing.temporary_path()));
  EXPECT_TRUE(fs::exists(kept));
  EXPECT_FALSE(fs::exists(open));
}

// The table holds 64 paths at once; the 65th is not recorded (its writer still removes it),
// and a slot freed by one writer serves the next.
TEST_F(hdf5, PendingTemporaryTableIsBoundedAndReused) {
  std::vector<ebla::detail::PendingTemporary> held;
  for (int i = 0; i < 64; ++i) {
    held.emplace_back(file("t" + std::to_string(i)));
    EXPECT_TRUE(held.back().recorded()) << i;
  }
  EXPECT_FALSE(ebla::detail::PendingTemporary(file("one too many")).recorded());
  EXPECT_FALSE(ebla::detail::PendingTemporary(std::string(5000, 'a')).recorded());  // past PATH_MAX
  held[7].release();
  EXPECT_FALSE(held[7].recorded());
  ebla::detail::PendingTemporary again(file("again"));
  EXPECT_TRUE(again.recorded());
  std::ofstream(file("again")) << "x";
  std::ofstream(file("t8")) << "x";
  std::ofstream(file("t7")) << "x";  // released: stays
  ebla::remove_pending_temporaries();
  EXPECT_FALSE(fs::exists(file("again")));
  EXPECT_FALSE(fs::exists(file("t8")));
  EXPECT_TRUE(fs::exists(file("t7")));
}

// A commit whose write fails (the file size capped below the file's, as a full disk would
// fail it): Hdf5Error naming the file and errno's reason, the previous file intact, no
// temporary left, and HDF5 in a state that closes cleanly at exit.
TEST_F(hdf5, AFailingWriteAtCommitLeavesThePreviousFileIntact) {
  const std::string path = file("previous.h5");
  std::ofstream(path) << "previous";
  ebla::Hdf5Writer out(path);
  out.root().dataset("v", std::vector<double>(100000, 1.0));  // 800 KB
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit capped = saved;
  capped.rlim_cur = 64 * 1024;
  void (*previous_handler)(int) = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &capped), 0);
  std::string error;
  try {
    out.commit();
  } catch (const ebla::Hdf5Error& e) {
    error = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous_handler);
  EXPECT_NE(error.find("cannot write '" + out.temporary_path() + "'"), std::string::npos) << error;
  EXPECT_NE(error.find("File too large; nothing was written"), std::string::npos) << error;
  std::ifstream in(path);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "previous");
  EXPECT_FALSE(fs::exists(out.temporary_path()));
  EXPECT_FALSE(out.committed());
}

TEST_F(hdf5, AnExceptionMidWayLeavesThePreviousFileIntact) {
  const std::string path = file("previous.h5");
  std::ofstream(path) << "the previous result";
  try {
    ebla::Hdf5Writer out(path);
    out.root().group("g");
    out.root().group("g");  // duplicate: throws before commit
    FAIL() << "a duplicate group was accepted";
  } catch (const ebla::InvalidArgument&) {
  }
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "the previous result");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(hdf5, CommitReplacesAnExistingFile) {
  const std::string path = file("replaced.h5");
  std::ofstream(path) << "old";
  ebla::Hdf5Writer out(path);
  out.root().attribute("new", 1.0);
  out.commit();
  EXPECT_GT(H5Fis_hdf5(path.c_str()), 0);
}

TEST_F(hdf5, MovedWriterCommitsOnce) {
  const std::string path = file("moved.h5");
  ebla::Hdf5Writer a(path);
  const ebla::Hdf5Group g = a.root().group("g");
  ebla::Hdf5Writer b(std::move(a));
  g.dataset("v", std::vector<double>{1});  // handles follow the file, not the writer object
  b.commit();
  EXPECT_TRUE(fs::exists(path));
  EXPECT_THROW(b.commit(), ebla::InvalidArgument);
  EXPECT_THROW(g.dataset("w", std::vector<double>{1}), ebla::InvalidArgument);
}

// ---- errors ---------------------------------------------------------------------------

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const ebla::InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument thrown)";
}

TEST_F(hdf5, UnwritablePathsThrowNamingThePath) {
  const std::string missing = file("no/such/dir/run.h5");
  const std::string m = message_of([&] { ebla::Hdf5Writer out(missing); });
  EXPECT_NE(m.find("cannot create '" + missing + "'"), std::string::npos) << m;
  EXPECT_NE(m.find("No such file or directory"), std::string::npos) << m;

  const std::string d = message_of([&] { ebla::Hdf5Writer out(dir_.string()); });
  EXPECT_NE(d.find("'" + dir_.string() + "': it is a directory"), std::string::npos) << d;
  EXPECT_NE(message_of([] { ebla::Hdf5Writer out(""); }).find("empty output path"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_));

  if (::geteuid() != 0) {  // root writes anywhere: permissions cannot be tested as root
    const fs::path locked = dir_ / "locked";
    fs::create_directory(locked);
    fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
    const std::string p = (locked / "run.h5").string();
    const std::string l = message_of([&] { ebla::Hdf5Writer out(p); });
    EXPECT_NE(l.find("cannot create '" + p + "'"), std::string::npos) << l;
    fs::permissions(locked, fs::perms::owner_all);
  }
}

// commit() renames onto the path: a FIFO, a symbolic link, a read-only file or an input of
// the run would be replaced (and /dev/null with it, run as root). Each is refused before a
// temporary file is made, and left as it was.
TEST_F(hdf5, TargetsThatARenameWouldDestroyAreRefusedNamingThePath) {
  const std::string fifo = file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string f = message_of([&] { ebla::Hdf5Writer out(fifo); });
  EXPECT_NE(f.find("will not replace '" + fifo + "': it exists and is not a regular file"), std::string::npos) << f;
  EXPECT_TRUE(fs::is_fifo(fifo));

  const std::string target = file("target.h5"), link = file("link.h5");
  { std::FILE* t = std::fopen(target.c_str(), "w"); ASSERT_NE(t, nullptr); std::fputs("kept", t); std::fclose(t); }
  fs::create_symlink(target, link);
  const std::string l = message_of([&] { ebla::Hdf5Writer out(link); });
  EXPECT_NE(l.find("will not replace '" + link + "': it is a symbolic link"), std::string::npos) << l;
  EXPECT_TRUE(fs::is_symlink(link));

  const std::string input = message_of([&] { ebla::Hdf5Writer out(target, {"", file("other.mtx"), link}); });
  EXPECT_NE(input.find("will not replace '" + target + "': it is the input '" + link + "'"), std::string::npos) << input;
  EXPECT_NO_THROW(ebla::Hdf5Writer out(target, {file("other.mtx")}));  // another input: fine

  fs::permissions(target, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string r = message_of([&] { ebla::Hdf5Writer out(target); });
  EXPECT_NE(r.find("will not replace '" + target + "': it is read-only"), std::string::npos) << r;
  EXPECT_EQ(fs::file_size(target), 4u);  // "kept"
  // nothing else was created: the FIFO, the file and the link only
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 3);
}

TEST_F(hdf5, RejectsBadNamesDuplicatesAndShapes) {
  ebla::Hdf5Writer out(file("bad.h5"));
  const ebla::Hdf5Group root = out.root();
  const ebla::Hdf5Group g = root.group("g");
  EXPECT_NE(message_of([&] { root.group(""); }).find("'' is not a valid name"), std::string::npos);
  EXPECT_NE(message_of([&] { root.group("a/b"); }).find("'a/b' is not a valid name"), std::string::npos);
  EXPECT_NE(message_of([&] { root.group("g"); }).find("'/g' already exists"), std::string::npos);
  g.dataset("v", std::vector<double>{1});
  EXPECT_NE(message_of([&] { g.dataset("v", std::vector<std::int64_t>{1}); }).find("'/g/v' already exists"),
            std::string::npos);
  g.attribute("a", 1.0);
  EXPECT_NE(message_of([&] { g.attribute("a", "again"); }).find("attribute 'a' of '/g' already exists"),
            std::string::npos);
  EXPECT_NE(message_of([&] { g.dataset("m", std::vector<double>(5), 2, 3); }).find("shape 2 x 3 does not match 5"),
            std::string::npos);
  EXPECT_NE(message_of([&] { g.dataset("u", std::vector<std::uint8_t>(7), 2, 3); }).find("shape 2 x 3 does not match 7"),
            std::string::npos);
  out.commit();
  EXPECT_NE(message_of([&] { g.attribute("late", 1.0); }).find("already committed"), std::string::npos);
  EXPECT_NE(message_of([&] { out.root(); }).find("already committed"), std::string::npos);
}

}  // namespace
