// Runs a fuzz target over saved inputs without libFuzzer, so the checked-in corpora and the
// inputs of past crashes are ordinary tests in every build.
//
// Each argument is a file or a directory (read recursively; names starting with '.' are
// skipped; a directory that does not exist counts as empty). A crash or a broken invariant
// aborts the process; otherwise it prints how many inputs ran.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

void collect(const fs::path& path, std::vector<fs::path>& out) {
    std::error_code error;
    if (fs::is_regular_file(path, error)) {
        out.push_back(path);
        return;
    }
    if (!fs::is_directory(path, error)) return;
    for (const auto& entry : fs::recursive_directory_iterator(path, error)) {
        if (entry.is_regular_file() && !entry.path().filename().string().starts_with(".")) {
            out.push_back(entry.path());
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<fs::path> inputs;
    for (int i = 1; i < argc; ++i) {
        std::vector<fs::path> found;
        collect(argv[i], found);
        std::sort(found.begin(), found.end());
        inputs.insert(inputs.end(), found.begin(), found.end());
    }
    if (inputs.empty()) {
        std::fprintf(stderr, "no inputs found; name corpus files or directories\n");
        return 1;
    }
    for (const fs::path& path : inputs) {
        std::ifstream file(path, std::ios::binary);
        if (!file) {
            std::fprintf(stderr, "cannot read %s\n", path.c_str());
            return 1;
        }
        const std::string bytes((std::istreambuf_iterator<char>(file)),
                                std::istreambuf_iterator<char>());
        // Named before it runs, so a crash shows which input caused it.
        std::fprintf(stderr, "input %s\n", path.c_str());
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    }
    std::printf("replayed %zu inputs\n", inputs.size());
    return 0;
}
