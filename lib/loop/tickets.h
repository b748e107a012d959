// Exchange handles that cannot alias (docs/api.md §4).
//
// An Exchange lives in its connection's ring and is reused: the next request
// can come back at the same address. So the weir_exchange * a host holds is
// not that address but a ticket: [table 10 bits][entry 22 bits][generation
// 32 bits]. Each worker owns one table of entries, registered in a
// process-wide registry under the table index; an entry's generation grows
// every time it is given back, so a handle answered once, timed out, or of a
// destroyed engine no longer matches and is refused (WEIR_E_STALE), whatever
// the memory behind it now holds. The table index sits in the top bits, so a
// handle is never a canonical address: a host that dereferences one faults
// at once instead of reading someone's request.
//
// Entries are reused first in, first out over at least kChunk of them, so an
// entry's generation moves on once per kChunk exchanges of its worker: a
// handle could only alias after 2^32 reuses of its entry (about 4 * 10^12
// exchanges of one worker), and then only if presented at that moment. A
// table that replaces a destroyed one at the same index starts its
// generations above every generation the old one used.
//
// An entry's word is (generation << 32 | state). The owning thread issues
// entries and gives them back; any thread may claim one (the one answer):
//   Free --issue--> Local (an inline handler runs: the owning thread only)
//                   Any   (deferred or polled: any thread, once)
//   Local|Any --claim--> Claimed (the answer is being applied or is queued)
//   Claimed --retire--> Free, generation + 1 (owning thread)
//   Local|Any --cancel--> Free, generation + 1 (owning thread: the handler
//                                               deadline, the 500 fallback)
// A claim and a cancel race through one CAS, so exactly one of them wins.
//
// Lifetime: a foreign thread holds a TicketRef while it uses a table (the
// registry slot's users count); ~Worker unregisters the table and waits for
// the count to fall to 0 before the table goes, so a stale handle from any
// thread finds either the live table or none, never freed memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace weir {

struct Exchange;
class Worker;

enum class TicketState : uint32_t { Free = 0, Local = 1, Any = 2, Claimed = 3, Stream = 4, Upgraded = 5 };

struct Ticket {
    std::atomic<uint64_t> word{0};
    Exchange *x = nullptr;
    uint32_t next = 0;   // free list (index + 1; 0 ends it)
    bool head = false;   // the request is HEAD: an answer's body is not sent
    // A streamed answer (worker_stream.cc). The host writes one piece at a
    // time (one writer per stream), so these are the writer's and the
    // loop's: what it posted and the loop has not applied (nodes keep the
    // order: an owning-thread piece goes through the queue while any is
    // there), what the loop last saw unsent, whether a writer was refused
    // for room (the loop then hands the stream back once there is some),
    // whether its end may carry trailers, and the bytes a counted answer
    // still owes (UINT64_MAX: no length; proto/answer_rules.h).
    bool trailers = false;
    std::atomic<uint32_t> nodes{0};
    std::atomic<uint64_t> bytes{0};
    std::atomic<uint64_t> backlog{0};
    std::atomic<bool> want_room{false};
    uint64_t left = 0;
    // Upgraded: the connection waiting for weir_upgrade_take (an ImageNode;
    // null when it died before it could leave).
    void *image = nullptr;
    // Claimed by weir_upgrade (set by whichever thread claimed it): only
    // then does a Claimed ticket mean "the 101 has not left yet" to
    // weir_upgrade_take. Another answer's claim (a stream whose connection
    // died keeps its ticket Claimed until the engine releases it) is a
    // consumed handle: stale.
    std::atomic<bool> upgrading{false};
    // cfg.report_gone (worker_conns.cc): 1 once a poll has handed the
    // exchange out, 2 once it was handed back because its client went
    // (weir_exchange_gone says 2 then). The loop's; read from any thread.
    std::atomic<uint8_t> seen{0};
    // Its HTTP/2 stream was reset by the peer (the connection lives on):
    // weir_exchange_gone reports it as it reports a connection's client gone.
    std::atomic<bool> stream_gone{false};
};

class TicketTable {
  public:
    static constexpr uint32_t kTableBits = 10;
    static constexpr uint32_t kEntryBits = 22;
    static constexpr uint32_t kMaxTables = (1u << kTableBits) - 1; // index 0 is never used
    static constexpr uint32_t kChunk = 1024;
    static constexpr uint32_t kMaxChunks = (1u << kEntryBits) / kChunk;

    TicketTable() = default;
    ~TicketTable();
    TicketTable(const TicketTable &) = delete;
    TicketTable &operator=(const TicketTable &) = delete;

    // Control thread: registers the table for w. 0, or -EMFILE when the
    // process already has kMaxTables workers.
    int attach(Worker *w);
    // Control thread, from ~Worker: every handle of this table turns stale;
    // waits for foreign users to leave.
    void detach();

    // Owning thread. Makes sure issue() cannot fail; false when out of
    // memory or out of entries (the caller closes the connection).
    bool reserve();
    // Owning thread, after reserve(): the handle for x.
    uint64_t issue(Exchange *x, TicketState st, bool head);
    // Owning thread: x's entry is done with (its answer applied, or its
    // stream ended by the connection's death), whatever its state.
    void retire(uint64_t h);
    // Owning thread: takes an unclaimed entry back (Local, Any or Stream;
    // *was says which). false when it is not live any more (claimed, or
    // stale).
    bool cancel(uint64_t h, TicketState *was = nullptr);
    // Owning thread: h's state, Free when h is stale.
    TicketState state(uint64_t h) const;
    // Owning thread: h's entry while h is not stale, else null.
    Ticket *at(uint64_t h) const;
    // Owning thread: Claimed -> Upgraded (the connection is ready for the host).
    void set_upgraded(uint64_t h, void *image);
    // Owning thread: Upgraded -> Claimed, giving the image. false when h is
    // not Upgraded.
    bool take_upgraded(uint64_t h, void **image);
    // Owning thread: the exchange h names while it is Local or Any, else null.
    Exchange *live(uint64_t h) const;
    // Owning thread: Local -> Any (weir_defer). false when h is not Local.
    bool make_any(uint64_t h);
    uint64_t issued_now() const { return out_; } // entries not Free (tests)

  private:
    friend class TicketRef;
    Ticket *entry(uint32_t i) const;
    void give_back(uint32_t i, uint32_t gen);
    // Written by the owning thread as the table grows, read by any thread
    // that holds a handle; a chunk never moves or goes until the table does.
    std::atomic<Ticket *> chunks_[kMaxChunks] = {};
    uint32_t nchunks_ = 0;
    uint32_t free_head_ = 0, free_tail_ = 0; // index + 1
    uint32_t index_ = 0;    // in the registry; 0 while detached
    uint32_t gen_base_ = 1; // generations of new entries start here
    uint32_t gen_max_ = 1;
    uint64_t out_ = 0;
    Worker *worker_ = nullptr;
};

// Any thread: resolves a handle to its table and holds the table while it
// lives (the registry's users count). Empty when the handle names no live
// table (its engine was destroyed, or the value was never a handle).
class TicketRef {
  public:
    explicit TicketRef(uint64_t h);
    ~TicketRef();
    TicketRef(const TicketRef &) = delete;
    TicketRef &operator=(const TicketRef &) = delete;
    explicit operator bool() const { return table_ != nullptr; }
    // The request was HEAD (valid while the entry is live; any thread).
    bool head() const { return t_ && t_->head; }
    Worker *worker() const { return table_->worker_; }
    uint64_t handle() const { return h_; }
    // The exchange while the entry is Local or Any, else null (any thread;
    // for reading the request of a handle the caller holds).
    Exchange *peek() const;
    // Claims the one answer. owner: the caller is the worker's owning thread
    // (a Local entry is claimable only there). Returns 0 and *x, WEIR_E_STALE
    // (answered, timed out, never issued), or WEIR_E_STATE (a Local entry
    // from another thread: the handler did not call weir_defer).
    int claim(bool owner, Exchange **x);
    // Whether the exchange may still take an interim answer (no change): 0
    // while Local (owner only, else WEIR_E_STATE) or Any; -EINVAL once its
    // streamed answer began; WEIR_E_STALE once answered.
    int open(bool owner) const;
    // A streamed answer: begin (Local|Any -> Stream, as claim), the stream
    // while it is one (no change: 0, WEIR_E_STALE, or WEIR_E_STATE when h is
    // live but not a stream), and its end (Stream -> Claimed).
    int begin_stream(bool owner, Exchange **x);
    int stream(Exchange **x) const;
    int end_stream(Exchange **x);
    Ticket &ticket() const { return *t_; }

  private:
    int take(bool owner, TicketState to, Exchange **x);
    uint64_t h_;
    uint32_t slot_ = 0;
    TicketTable *table_ = nullptr;
    Ticket *t_ = nullptr;
};

// Test hook: the arm that must lose. Handles are the exchanges' addresses,
// as before tickets: a handle is resolved through whatever exchange now
// lives at that address (tests/integration/test_exchange_handles.cc shows a
// stale answer delivered to the next request with it).
std::atomic<bool> &tickets_raw_pointers();

} // namespace weir
