// An allocator for the nodes of the tables a message passes through (a request's record at
// its child, a session's id in flight): a freed node waits on a free list of its type, and the
// next node of that type is taken from there.
//
// Why: such a table gains and loses one node per request. Under load, hundreds are in flight
// at once, more than malloc's per-thread cache keeps, and malloc then spends more on a node
// than the rest of the message's routing (PERFORMANCE.md, "A request's records without
// malloc"). A free list gives the most recently freed node back, still in the cache.
//
// Only single nodes are recycled; arrays (a hash table's buckets) go to operator new. At most
// kKeptNodes free nodes of a type are kept; past that they are deleted, so a burst leaves a
// bounded amount behind. Kept nodes stay until the process ends, reachable from the list.
//
// One thread's: the lists are not locked. mcpd's tables all live on its event loop thread.
#pragma once

#include <cstddef>
#include <new>

// Under AddressSanitizer a node on the free list is poisoned past its link: a use after free
// is still reported, as it would be for memory given back to malloc.
#if defined(__SANITIZE_ADDRESS__)
#define MCPD_RECYCLING_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MCPD_RECYCLING_ASAN 1
#endif
#endif
#if defined(MCPD_RECYCLING_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace mcpd {

template <typename T>
class RecyclingAllocator {
public:
    using value_type = T;
    static constexpr std::size_t kKeptNodes = 1024;

    RecyclingAllocator() noexcept = default;
    template <typename U>
    RecyclingAllocator(const RecyclingAllocator<U>&) noexcept {}  // NOLINT: rebinding converts

    T* allocate(std::size_t n) {
        if (n == 1) {
            FreeList& list = free_list();
            if (list.head != nullptr) {
                Free* node = list.head;
                unpoison(node);
                list.head = node->next;
                --list.count;
                return reinterpret_cast<T*>(node);
            }
        }
        return static_cast<T*>(::operator new(n * sizeof(T)));
    }

    void deallocate(T* p, std::size_t n) noexcept {
        if (n == 1) {
            FreeList& list = free_list();
            if (list.count < kKeptNodes) {
                list.head = ::new (static_cast<void*>(p)) Free{list.head};
                ++list.count;
                poison(p);
                return;
            }
        }
        ::operator delete(p);
    }

    // Free nodes of this type kept (for tests).
    static std::size_t kept() { return free_list().count; }

    template <typename U>
    bool operator==(const RecyclingAllocator<U>&) const noexcept {
        return true;  // one free list per type: any instance frees any node
    }

private:
    struct Free {
        Free* next;
    };
    static_assert(sizeof(T) >= sizeof(Free), "a free node holds the link");
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "operator new aligns it");

    // Trivially destructible: a table destroyed at exit, after it, still frees into it.
    struct FreeList {
        Free* head = nullptr;
        std::size_t count = 0;
    };
    // All but the link: the leak checker follows the list through it.
    static void poison([[maybe_unused]] void* node) {
#if defined(MCPD_RECYCLING_ASAN)
        ASAN_POISON_MEMORY_REGION(static_cast<char*>(node) + sizeof(Free),
                                  sizeof(T) - sizeof(Free));
#endif
    }
    static void unpoison([[maybe_unused]] void* node) {
#if defined(MCPD_RECYCLING_ASAN)
        ASAN_UNPOISON_MEMORY_REGION(node, sizeof(T));
#endif
    }
    static FreeList& free_list() {
        static FreeList list;
        return list;
    }
};

}  // namespace mcpd
