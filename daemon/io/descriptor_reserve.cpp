#include "daemon/io/descriptor_reserve.h"

#include <fcntl.h>

#include <utility>

namespace mcpd {

DescriptorReserve::DescriptorReserve(std::size_t size) : size_(size) {
    held_.reserve(size);
    refill();
}

std::size_t DescriptorReserve::release() {
    const std::size_t released = held_.size();
    held_.clear();
    return released;
}

bool DescriptorReserve::refill() {
    while (held_.size() < size_) {
        UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (!fd) return false;
        held_.push_back(std::move(fd));
    }
    return true;
}

}  // namespace mcpd
