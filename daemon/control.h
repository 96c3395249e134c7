// gpufaultd's control socket: `gpufault status` and `gpufault watch` talk to it.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded
#include <boost/asio.hpp>
#include <expected>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>

namespace gpufault::daemon {

struct State;

/// A Unix stream socket (mode 0660, group `control.group`). A client sends one request line:
///   `status` → one JSON object line (streams with position, lines, evidence, lag, lost
///              records and bytes; store path, size and error; uptime), then the server closes;
///   `watch`  → JSON lines as records (`{"type":"evidence",…}`), new incidents
///              (`{"type":"incident",…}`) and incidents that gained records
///              (`{"type":"incident_update",…,"members_before":N}`) are committed, until the
///              client closes; every record committed after the request is sent.
/// Peers are checked with SO_PEERCRED and SO_PEERGROUPS: root, the daemon's own user, or a
/// member (primary or supplementary) of the group; others get `{"error":"permission denied"}`.
/// A watcher that reads too slowly loses lines beyond its queue (`control.watch_queue_kib`
/// bytes); the loss is counted and told to it (`{"type":"dropped","lines":N}`).
/// Limits (gpufaultd.conf(5) [control]): at most `max_clients` connections (one more gets
/// `{"error":"too many connections …"}` and is closed), at most `max_watchers` watchers
/// (`{"error":"too many watchers …"}`), and a client that has not sent its request within
/// `idle_timeout_ms` is closed. When accept(2) fails (EMFILE, ENFILE) the server waits (10 ms,
/// doubling up to 1 s) before accepting again, and logs it once. `status` reports
/// `control`: open clients, watchers, refused connections and failed accepts.
class ControlServer {
  public:
    /// Binds the socket of `s.cfg` (a stale socket file is replaced; one with a live server
    /// behind it is an error) and starts accepting. Errors name the path.
    static std::expected<std::unique_ptr<ControlServer>, std::string> open(State& s);
    ~ControlServer();

    /// Stops accepting and closes every connection (the object must outlive queued handlers).
    void close();

    /// New records (and, with `incidents`, recomputed incidents) were committed: sends what is
    /// new to every watcher.
    void published(bool incidents);

    struct Conn;

  private:
    explicit ControlServer(State& s);
    void accept();
    void acceptFailed(const boost::system::error_code& ec);
    void admit(boost::asio::local::stream_protocol::socket sock);
    void serve(std::shared_ptr<Conn> c);
    std::string statusJson() const;
    /// Removes the socket file, only while it is the one this server bound (a second daemon
    /// refused at start-up, or one whose file was replaced since, leaves it alone).
    void unlinkOwn();

    State& s_;
    std::string path_;
    /// the socket file this server bound (device, inode); nullopt: none
    std::optional<std::pair<dev_t, ino_t>> bound_;
    gid_t gid_ = static_cast<gid_t>(-1);
    boost::asio::local::stream_protocol::acceptor acceptor_;
    boost::asio::steady_timer backoff_;  ///< accept retried after a failure
    uint64_t backoffMs_ = 0;
    bool acceptFailing_ = false;
    std::shared_ptr<size_t> live_;  ///< open connections (shared with them)
    uint64_t refused_ = 0, acceptErrors_ = 0;
    std::set<std::shared_ptr<Conn>> watchers_;
    /// the last record id told (or, without watchers, committed): published() sends newer ones
    int64_t lastEvidence_ = 0;
    /// incidents told to watchers (first record key) → (records, kinds) when told
    std::map<std::string, std::pair<int64_t, std::string>> announced_;
};

}  // namespace gpufault::daemon
