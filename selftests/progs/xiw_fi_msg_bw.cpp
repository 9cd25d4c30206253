// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// xiw_fi_msg_bw: message bandwidth over libfabric FI_EP_MSG endpoints (by
// default on the verbs provider), like fabtests' fi_msg_bw, which Debian 12
// does not package; every message's payload is verified.
//
//   server:  xiw_fi_msg_bw -s ADDR [-p PORT] [-f PROV] [--busy]
//   client:  xiw_fi_msg_bw ADDR [-p PORT] [-f PROV] [-S SIZE] [-I N]
//                          [-W N] [--busy] [--selftest-corrupt]
//
//   -p PORT   port (default 9228)
//   -f PROV   libfabric provider (default "verbs")
//   -S SIZE   one message size in bytes (K/M suffixes allowed); default
//             every power of 4 from 1 B to 1 MiB
//   -I N      messages per size (default 1000, fewer for big sizes so that
//             one size moves at most 32 MiB, but at least 16)
//   -W N      window: receives the server keeps posted, sends in flight
//             (1..256, default 64)
//   --busy    spin on fi_cq_read instead of blocking in fi_cq_sread
//   --selftest-corrupt   the client flips one byte of one message (the
//             middle one of the first size) after building it: the server
//             must report it and both sides must end with FAIL
//
// The server listens on a passive endpoint (fi_getinfo with FI_SOURCE,
// fi_listen, FI_CONNREQ on its EQ, fi_accept); the client connects
// (fi_connect). Buffers are registered with fi_mr_reg and passed with
// fi_mr_desc; completions are FI_CQ_FORMAT_DATA. The client sends a CONFIG
// control message (sizes, counts, window), the server posts W receives and
// answers READY with W credits; the client then streams fi_send()s, never
// more than its credits (iWARP has no RNR retry: a Send without a posted
// receive kills the connection). The server verifies every message as it
// completes (length, sequence number and size in its first 16 bytes, then a
// body that depends on the sequence number), reposts the receive and
// returns credits in batches of W/2. At the end of each size it sends
// RESULT (count, corrupt messages), at the very end DONE (totals): that is
// the final handshake, after which the client disconnects (fi_shutdown)
// and both wait for FI_SHUTDOWN. Messages shorter than 16 bytes carry the
// first bytes of that header (a 1-byte message: the sequence number's low
// byte); the completion's length is checked too.
//
// Output (both sides): "info role=server|client prov=P domain=D fabric=F",
// then per size
//   "bw bytes=B iters=N secs=T MB/s=X msg/s=Y errors=E"
// (MB = 10^6 bytes; the client times from its first Send of the size to the
// server's RESULT, the server from its go-ahead to the last verified
// message, verification included), corrupt messages on the server as
// "FAIL message seq=... ", and last "ok ..." or "FAIL why".
// Exit 0 only if every message arrived intact (ok), 1 on FAIL, 2 on a setup
// error (bad arguments, a libfabric call that failed).
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMagic = 0x5869774d; // "MwiX": control and data headers
constexpr int kCtlSlots = 16;		 // control receives/sends per side
constexpr int kMaxWindow = 256;
constexpr int kMaxSizes = 32;
constexpr uint64_t kMaxBufBytes = 64ull << 20; // window * slot cap
constexpr int kShowErrors = 5;
constexpr int kStallSec = 30;

[[noreturn]] void die(const char *what, long ret = 0)
{
	if (ret)
		std::fprintf(stderr, "xiw_fi_msg_bw: %s: %s (%ld)\n", what,
			     fi_strerror((int)-ret), ret);
	else
		std::fprintf(stderr, "xiw_fi_msg_bw: %s\n", what);
	std::exit(2);
}

[[noreturn]] void failed(const std::string &why)
{
	std::printf("FAIL %s\n", why.c_str());
	std::exit(1);
}

std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *f, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, f);
	std::vsnprintf(buf, sizeof(buf), f, ap);
	va_end(ap);
	return buf;
}

uint64_t mix(uint64_t x) // splitmix64
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

enum CtlType : uint32_t { CONFIG = 1, READY, CREDIT, RESULT, DONE };

const char *ctl_name(uint32_t t)
{
	static const char *n[] = { "?", "CONFIG", "READY", "CREDIT", "RESULT", "DONE" };
	return t <= DONE ? n[t] : "?";
}

struct Ctl {
	uint32_t magic, type;
	uint64_t a, b, c, d; // per type, see the senders
	uint32_t window, nsizes;
	uint64_t sizes[kMaxSizes], iters[kMaxSizes];
};

enum Kind { DATA_TX, DATA_RX, CTL_TX, CTL_RX };

// The context of every operation; FI_CONTEXT mode: fi_context first.
struct Op {
	fi_context fctx;
	Kind kind;
	int slot;
};

// Word k of message seq of the given size (word 0: seq, word 1: size and
// magic, then a body that depends on seq).
struct Pattern {
	std::vector<uint64_t> base;

	explicit Pattern(size_t words) : base(words)
	{
		for (size_t k = 0; k < words; k++)
			base[k] = mix(k ^ 0x786977ull);
	}
	uint64_t word(size_t k, uint64_t seq, uint64_t size, uint64_t m) const
	{
		if (k == 0)
			return seq;
		if (k == 1)
			return size | (uint64_t)kMagic << 32;
		return base[k] ^ m;
	}
	void fill(uint8_t *p, uint64_t seq, uint64_t size) const
	{
		auto *w = reinterpret_cast<uint64_t *>(p);
		uint64_t m = mix(seq), words = (size + 7) / 8;

		for (size_t k = 0; k < words && k < 2; k++)
			w[k] = word(k, seq, size, m);
		for (size_t k = 2; k < words; k++)
			w[k] = base[k] ^ m;
	}
	// Offset of the first wrong byte, or -1.
	long check(const uint8_t *p, uint64_t seq, uint64_t size, uint8_t *got,
		   uint8_t *exp) const
	{
		const auto *w = reinterpret_cast<const uint64_t *>(p);
		uint64_t m = mix(seq), full = size / 8;

		for (size_t k = 0; k < full; k++) {
			uint64_t e = k < 2 ? word(k, seq, size, m) : base[k] ^ m;
			if (w[k] != e)
				return first_diff(p, k, e, 8, got, exp);
		}
		if (size % 8) {
			uint64_t e = word(full, seq, size, m);
			if (std::memcmp(&w[full], &e, size % 8))
				return first_diff(p, full, e, size % 8, got, exp);
		}
		return -1;
	}
	static long first_diff(const uint8_t *p, size_t k, uint64_t e, size_t n,
			       uint8_t *got, uint8_t *exp)
	{
		uint8_t eb[8];
		std::memcpy(eb, &e, 8);
		for (size_t i = 0; i < n; i++)
			if (p[k * 8 + i] != eb[i]) {
				*got = p[k * 8 + i];
				*exp = eb[i];
				return (long)(k * 8 + i);
			}
		return -1;
	}
};

struct Options {
	bool server = false, busy = false, corrupt = false;
	std::string addr, port = "9228", prov = "verbs";
	uint64_t size = 0, iters = 0;
	int window = 64;
};

uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = std::strtoull(s, &end, 0);
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end || !v)
		die(fmt("bad size %s", s).c_str());
	return v;
}

class Bench {
public:
	explicit Bench(const Options &o) : opt_(o) {}
	int run();

private:
	const Options &opt_;
	fi_info *hints_ = nullptr, *info_ = nullptr;
	fid_fabric *fabric_ = nullptr;
	fid_eq *eq_ = nullptr;
	fid_pep *pep_ = nullptr;
	fid_domain *domain_ = nullptr;
	fid_ep *ep_ = nullptr;
	fid_cq *cq_ = nullptr;
	fid_mr *ctl_mr_ = nullptr, *data_mr_ = nullptr;

	// control: kCtlSlots receive then kCtlSlots send buffers
	std::vector<Ctl> ctl_;
	std::vector<Op> ctl_rx_op_, ctl_tx_op_;
	uint64_t ctl_tx_posted_ = 0, ctl_tx_done_ = 0;

	// data: window slots of slot_ bytes
	uint8_t *data_ = nullptr;
	uint64_t slot_ = 0;
	std::vector<Op> data_op_;
	Pattern *pat_ = nullptr;

	// the run, as CONFIG says
	int window_ = 0;
	std::vector<uint64_t> sizes_, iters_;

	// client state
	int64_t credits_ = 0;
	uint64_t tx_posted_ = 0, tx_done_ = 0;
	std::vector<Ctl> results_;
	bool ready_ = false, done_ = false;
	Ctl done_msg_{};

	// server state
	uint64_t rx_seq_ = 0;
	std::vector<uint64_t> rx_slot_seq_;
	bool got_config_ = false;
	Ctl config_{};

	Clock::time_point last_activity_ = Clock::now();

	void getinfo();
	void open_ep(fi_info *info);
	void connect_server();
	void connect_client();
	uint32_t eq_wait(fid_t *fid, int timeout_ms, fi_info **connreq);
	void alloc_data(uint64_t max_size);
	void post_ctl_rx(int slot);
	void send_ctl(const Ctl &c);
	void post_data_rx(int slot);
	int progress(int timeout_ms = 1000);
	void handle(const fi_cq_data_entry &e);
	void on_ctl(const Ctl &c);
	void on_data(int slot, uint64_t len);
	int run_client();
	int run_server();
	void bw_line(uint64_t size, uint64_t n, double secs, uint64_t errors);
	void shutdown_wait(bool initiate);
	void close_all();

	// current size on the server
	size_t rx_size_idx_ = 0;
	uint64_t rx_count_ = 0, rx_errors_ = 0, rx_errors_total_ = 0, rx_pending_ = 0;
	int rx_shown_ = 0;
};

void Bench::getinfo()
{
	hints_ = fi_allocinfo();
	if (!hints_)
		die("fi_allocinfo");
	hints_->ep_attr->type = FI_EP_MSG;
	hints_->caps = FI_MSG;
	hints_->mode = FI_CONTEXT;
	hints_->domain_attr->mr_mode =
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints_->fabric_attr->prov_name = strdup(opt_.prov.c_str());

	int ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
			     opt_.addr.c_str(), opt_.port.c_str(),
			     opt_.server ? FI_SOURCE : 0, hints_, &info_);
	if (ret)
		die(fmt("fi_getinfo(%s, %s:%s)", opt_.prov.c_str(),
			opt_.addr.c_str(), opt_.port.c_str()).c_str(), ret);
	ret = fi_fabric(info_->fabric_attr, &fabric_, nullptr);
	if (ret)
		die("fi_fabric", ret);
	fi_eq_attr eq_attr{};
	eq_attr.wait_obj = FI_WAIT_UNSPEC;
	ret = fi_eq_open(fabric_, &eq_attr, &eq_, nullptr);
	if (ret)
		die("fi_eq_open", ret);
}

// Domain, CQ, endpoint (bound to the EQ and the CQ, enabled) and the
// control buffers for the connection that info describes.
void Bench::open_ep(fi_info *info)
{
	int ret = fi_domain(fabric_, info, &domain_, nullptr);
	if (ret)
		die("fi_domain", ret);
	std::printf("info role=%s prov=%s domain=%s fabric=%s\n",
		    opt_.server ? "server" : "client",
		    info->fabric_attr->prov_name, info->domain_attr->name,
		    info->fabric_attr->name);

	size_t qsize = kMaxWindow + 2 * kCtlSlots;
	info->tx_attr->size = qsize;
	info->rx_attr->size = qsize;

	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_DATA;
	cq_attr.size = 2 * qsize;
	cq_attr.wait_obj = opt_.busy ? FI_WAIT_NONE : FI_WAIT_UNSPEC;
	ret = fi_cq_open(domain_, &cq_attr, &cq_, nullptr);
	if (ret)
		die("fi_cq_open", ret);
	ret = fi_endpoint(domain_, info, &ep_, nullptr);
	if (ret)
		die("fi_endpoint", ret);
	if ((ret = fi_ep_bind(ep_, &eq_->fid, 0)))
		die("fi_ep_bind(eq)", ret);
	if ((ret = fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV)))
		die("fi_ep_bind(cq)", ret);
	if ((ret = fi_enable(ep_)))
		die("fi_enable", ret);

	ctl_.assign(2 * kCtlSlots, Ctl{});
	ret = fi_mr_reg(domain_, ctl_.data(), ctl_.size() * sizeof(Ctl),
			FI_SEND | FI_RECV, 0, 1, 0, &ctl_mr_, nullptr);
	if (ret)
		die("fi_mr_reg(control)", ret);
	ctl_rx_op_.resize(kCtlSlots);
	ctl_tx_op_.resize(kCtlSlots);
	for (int i = 0; i < kCtlSlots; i++) {
		ctl_rx_op_[i] = Op{ {}, CTL_RX, i };
		ctl_tx_op_[i] = Op{ {}, CTL_TX, i };
	}
}

// Waits for one EQ event; FI_CONNREQ's info goes to *connreq.
uint32_t Bench::eq_wait(fid_t *fid, int timeout_ms, fi_info **connreq)
{
	alignas(fi_eq_cm_entry) uint8_t buf[sizeof(fi_eq_cm_entry) + 256];
	auto *entry = reinterpret_cast<fi_eq_cm_entry *>(buf); // + connection data
	uint32_t event;
	ssize_t n = fi_eq_sread(eq_, &event, buf, sizeof(buf), timeout_ms, 0);

	if (n == -FI_EAVAIL) {
		fi_eq_err_entry err{};
		char buf[256] = "";
		fi_eq_readerr(eq_, &err, 0);
		fi_eq_strerror(eq_, err.prov_errno, err.err_data, buf, sizeof(buf));
		failed(fmt("EQ error: %s (provider: %d %s)", fi_strerror(err.err),
			   err.prov_errno, buf));
	}
	if (n == -FI_EAGAIN || n == -FI_ETIMEDOUT)
		return 0;
	if (n < 0)
		die("fi_eq_sread", n);
	if (fid)
		*fid = entry->fid;
	if (event == FI_CONNREQ && connreq)
		*connreq = entry->info;
	else if (event == FI_CONNREQ)
		fi_freeinfo(entry->info);
	return event;
}

void Bench::connect_server()
{
	int ret = fi_passive_ep(fabric_, info_, &pep_, nullptr);
	if (ret)
		die("fi_passive_ep", ret);
	if ((ret = fi_pep_bind(pep_, &eq_->fid, 0)))
		die("fi_pep_bind", ret);
	if ((ret = fi_listen(pep_)))
		die("fi_listen", ret);
	std::printf("listening on %s:%s\n", opt_.addr.c_str(), opt_.port.c_str());

	fi_info *req = nullptr;
	uint32_t ev = eq_wait(nullptr, 60000, &req);
	if (ev != FI_CONNREQ)
		failed(fmt("expected FI_CONNREQ, got event %u", ev));
	open_ep(req);
	post_ctl_rx(0); // CONFIG; the data receives follow once it is known
	if ((ret = fi_accept(ep_, nullptr, 0)))
		die("fi_accept", ret);
	fi_freeinfo(req);
	fid_t fid = nullptr;
	ev = eq_wait(&fid, 20000, nullptr);
	if (ev != FI_CONNECTED || fid != &ep_->fid)
		failed(fmt("expected FI_CONNECTED, got event %u", ev));
	fi_close(&pep_->fid);
	pep_ = nullptr;
}

void Bench::connect_client()
{
	open_ep(info_);
	for (int i = 0; i < kCtlSlots; i++)
		post_ctl_rx(i);
	int ret = fi_connect(ep_, info_->dest_addr, nullptr, 0);
	if (ret)
		die("fi_connect", ret);
	fid_t fid = nullptr;
	uint32_t ev = eq_wait(&fid, 20000, nullptr);
	if (ev != FI_CONNECTED || fid != &ep_->fid)
		failed(fmt("expected FI_CONNECTED, got event %u", ev));
	std::printf("connected to %s:%s\n", opt_.addr.c_str(), opt_.port.c_str());
}

void Bench::alloc_data(uint64_t max_size)
{
	slot_ = (max_size + 63) & ~63ull;
	if ((uint64_t)window_ * slot_ > kMaxBufBytes)
		window_ = (int)std::max<uint64_t>(1, kMaxBufBytes / slot_);
	uint64_t len = window_ * slot_;
	data_ = static_cast<uint8_t *>(std::aligned_alloc(4096, (len + 4095) & ~4095ull));
	if (!data_)
		die("out of memory");
	std::memset(data_, 0, len);
	// (distinct requested keys for providers without FI_MR_PROV_KEY)
	int ret = fi_mr_reg(domain_, data_, len, FI_SEND | FI_RECV, 0, 2, 0,
			    &data_mr_, nullptr);
	if (ret)
		die("fi_mr_reg(data)", ret);
	data_op_.resize(window_);
	for (int i = 0; i < window_; i++)
		data_op_[i] = Op{ {}, opt_.server ? DATA_RX : DATA_TX, i };
	pat_ = new Pattern(slot_ / 8);
}

void Bench::post_ctl_rx(int slot)
{
	ssize_t ret = fi_recv(ep_, &ctl_[slot], sizeof(Ctl), fi_mr_desc(ctl_mr_),
			      0, &ctl_rx_op_[slot]);
	if (ret)
		die("fi_recv(control)", ret);
}

void Bench::post_data_rx(int slot)
{
	ssize_t ret = fi_recv(ep_, data_ + slot * slot_, slot_,
			      fi_mr_desc(data_mr_), 0, &data_op_[slot]);
	if (ret)
		die("fi_recv(data)", ret);
}

void Bench::send_ctl(const Ctl &c)
{
	while (ctl_tx_posted_ - ctl_tx_done_ >= kCtlSlots)
		progress();
	int slot = (int)(ctl_tx_posted_ % kCtlSlots);
	Ctl *buf = &ctl_[kCtlSlots + slot];
	*buf = c;
	buf->magic = kMagic;
	size_t len = c.type == CONFIG ? sizeof(Ctl) : offsetof(Ctl, window);
	for (;;) {
		ssize_t ret = fi_send(ep_, buf, len, fi_mr_desc(ctl_mr_), 0,
				      &ctl_tx_op_[slot]);
		if (ret == -FI_EAGAIN) {
			progress();
			continue;
		}
		if (ret)
			die("fi_send(control)", ret);
		break;
	}
	ctl_tx_posted_++;
}

// Reads completions (waiting up to timeout_ms) and handles them; fails the
// run when nothing at all happened for kStallSec.
int Bench::progress(int timeout_ms)
{
	fi_cq_data_entry e[16];
	ssize_t n = fi_cq_read(cq_, e, 16);

	if (n == -FI_EAGAIN && !opt_.busy && timeout_ms > 0)
		n = fi_cq_sread(cq_, e, 16, nullptr, timeout_ms);
	if (n == -FI_EAVAIL) {
		fi_cq_err_entry err{};
		char buf[256] = "";
		fi_cq_readerr(cq_, &err, 0);
		fi_cq_strerror(cq_, err.prov_errno, err.err_data, buf, sizeof(buf));
		const Op *op = static_cast<const Op *>(err.op_context);
		static const char *kinds[] = { "data send", "data receive",
					       "control send", "control receive" };
		failed(fmt("%s completed in error: %s (provider: %d %s)",
			   op ? kinds[op->kind] : "?", fi_strerror(err.err),
			   err.prov_errno, buf));
	}
	if (n == -FI_EAGAIN || n == -FI_ETIMEDOUT || n == 0) {
		if (Clock::now() - last_activity_ > std::chrono::seconds(kStallSec))
			failed(fmt("stalled %d s: sent %llu (%llu completed), "
				   "received %llu, credits %lld, control sent %llu "
				   "(%llu completed)", kStallSec,
				   (unsigned long long)tx_posted_,
				   (unsigned long long)tx_done_,
				   (unsigned long long)rx_seq_, (long long)credits_,
				   (unsigned long long)ctl_tx_posted_,
				   (unsigned long long)ctl_tx_done_));
		return 0;
	}
	if (n < 0)
		die("fi_cq_read", n);
	last_activity_ = Clock::now();
	for (ssize_t i = 0; i < n; i++)
		handle(e[i]);
	return (int)n;
}

void Bench::handle(const fi_cq_data_entry &e)
{
	const Op *op = static_cast<const Op *>(e.op_context);

	switch (op->kind) {
	case DATA_TX:
		tx_done_++;
		break;
	case CTL_TX:
		ctl_tx_done_++;
		break;
	case CTL_RX: {
		Ctl c{};
		std::memcpy(&c, &ctl_[op->slot], std::min<size_t>(e.len, sizeof(Ctl)));
		if (c.magic != kMagic)
			failed(fmt("control message with bad magic 0x%x (length %zu)",
				   c.magic, e.len));
		if (!opt_.server)
			post_ctl_rx(op->slot);
		on_ctl(c);
		break;
	}
	case DATA_RX:
		on_data(op->slot, e.len);
		break;
	}
}

void Bench::on_ctl(const Ctl &c)
{
	if (opt_.server) {
		if (c.type != CONFIG || got_config_)
			failed(fmt("server: unexpected control message %s", ctl_name(c.type)));
		config_ = c;
		got_config_ = true;
		return;
	}
	switch (c.type) {
	case READY:
		ready_ = true;
		credits_ += (int64_t)c.a;
		break;
	case CREDIT:
		credits_ += (int64_t)c.a;
		break;
	case RESULT:
		credits_ += (int64_t)c.d;
		results_.push_back(c);
		break;
	case DONE:
		done_ = true;
		done_msg_ = c;
		break;
	default:
		failed(fmt("client: unexpected control message %s", ctl_name(c.type)));
	}
	if (credits_ > window_)
		failed(fmt("client: %lld credits, more than the window %d",
			   (long long)credits_, window_));
}

void Bench::on_data(int slot, uint64_t len)
{
	if (rx_size_idx_ >= sizes_.size())
		failed(fmt("server: message seq=%llu after the last expected one",
			   (unsigned long long)rx_seq_));
	uint64_t size = sizes_[rx_size_idx_], seq = rx_seq_++;
	const uint8_t *p = data_ + slot * slot_;
	uint8_t got = 0, exp = 0;
	std::string bad;

	if (slot != (int)(seq % window_))
		bad = fmt("arrived in receive slot %d, expected %d", slot,
			  (int)(seq % window_));
	else if (len != size)
		bad = fmt("length %llu, expected %llu", (unsigned long long)len,
			  (unsigned long long)size);
	else if (long off = pat_->check(p, seq, size, &got, &exp); off >= 0)
		bad = fmt("byte %ld is 0x%02x, expected 0x%02x", off, got, exp);
	if (!bad.empty()) {
		rx_errors_++;
		rx_errors_total_++;
		if (rx_shown_++ < kShowErrors)
			std::printf("FAIL message seq=%llu (size %llu, #%llu of it): %s\n",
				    (unsigned long long)seq, (unsigned long long)size,
				    (unsigned long long)rx_count_, bad.c_str());
		else if (rx_shown_ == kShowErrors + 1)
			std::printf("FAIL ... further corrupt messages not shown\n");
	}
	rx_count_++;
	post_data_rx(slot);
	rx_pending_++;
}

void Bench::bw_line(uint64_t size, uint64_t n, double secs, uint64_t errors)
{
	if (secs <= 0)
		secs = 1e-9;
	std::printf("bw bytes=%llu iters=%llu secs=%.3f MB/s=%.3f msg/s=%.1f errors=%llu\n",
		    (unsigned long long)size, (unsigned long long)n, secs,
		    (double)size * n / secs / 1e6, n / secs,
		    (unsigned long long)errors);
}

int Bench::run_client()
{
	// CONFIG: what the server must expect.
	Ctl cfg{};
	cfg.type = CONFIG;
	window_ = opt_.window;
	for (uint64_t s = 1; s <= (1u << 20); s *= 4)
		if (!opt_.size)
			sizes_.push_back(s);
	if (opt_.size)
		sizes_.push_back(opt_.size);
	uint64_t max_size = 0;
	for (uint64_t s : sizes_) {
		uint64_t n = opt_.iters;
		if (!n)
			n = std::max<uint64_t>(16, std::min<uint64_t>(1000, (32ull << 20) / s));
		iters_.push_back(n);
		max_size = std::max(max_size, s);
	}
	if (max_size > info_->ep_attr->max_msg_size)
		die(fmt("size %llu is above the endpoint's max_msg_size %zu",
			(unsigned long long)max_size, info_->ep_attr->max_msg_size).c_str());
	connect_client();
	alloc_data(max_size);
	cfg.window = window_;
	cfg.nsizes = (uint32_t)sizes_.size();
	for (size_t i = 0; i < sizes_.size(); i++) {
		cfg.sizes[i] = sizes_[i];
		cfg.iters[i] = iters_[i];
	}
	send_ctl(cfg);
	while (!ready_)
		progress();
	std::printf("window %d, %zu sizes\n", window_, sizes_.size());
	std::printf("# bw bytes iters secs MB/s msg/s errors(at the server)\n");

	uint64_t seq = 0, corrupt_seq = opt_.corrupt ? iters_[0] / 2 : UINT64_MAX;
	uint64_t total = 0, total_bytes = 0;
	for (size_t i = 0; i < sizes_.size(); i++) {
		uint64_t size = sizes_[i];
		auto t0 = Clock::now();
		for (uint64_t k = 0; k < iters_[i]; k++, seq++) {
			while (credits_ == 0 || tx_posted_ - tx_done_ >= (uint64_t)window_)
				progress();
			int slot = (int)(seq % window_);
			uint8_t *p = data_ + slot * slot_;
			pat_->fill(p, seq, size);
			if (seq == corrupt_seq) {
				p[size / 2] ^= 0x5a;
				std::printf("selftest: corrupted byte %llu of message seq=%llu\n",
					    (unsigned long long)size / 2,
					    (unsigned long long)seq);
			}
			for (;;) {
				ssize_t ret = fi_send(ep_, p, size, fi_mr_desc(data_mr_), 0,
						      &data_op_[slot]);
				if (ret == -FI_EAGAIN) {
					progress();
					continue;
				}
				if (ret)
					die("fi_send(data)", ret);
				break;
			}
			tx_posted_++;
			credits_--;
		}
		while (results_.size() <= i)
			progress();
		double secs = std::chrono::duration<double>(Clock::now() - t0).count();
		const Ctl &r = results_[i];
		if (r.a != i || r.b != iters_[i])
			failed(fmt("RESULT for size index %llu says %llu messages, "
				   "expected index %zu with %llu",
				   (unsigned long long)r.a, (unsigned long long)r.b, i,
				   (unsigned long long)iters_[i]));
		bw_line(size, iters_[i], secs, r.c);
		total += iters_[i];
		total_bytes += size * iters_[i];
	}
	while (!done_)
		progress();
	while (tx_done_ < tx_posted_ || ctl_tx_done_ < ctl_tx_posted_)
		progress();
	shutdown_wait(true);
	if (done_msg_.b != total)
		failed(fmt("the server received %llu messages, %llu were sent",
			   (unsigned long long)done_msg_.b, (unsigned long long)total));
	if (done_msg_.c)
		failed(fmt("the server found %llu of %llu messages corrupt",
			   (unsigned long long)done_msg_.c, (unsigned long long)total));
	std::printf("ok %llu messages, %llu bytes sent and verified by the server\n",
		    (unsigned long long)total, (unsigned long long)total_bytes);
	return 0;
}

int Bench::run_server()
{
	connect_server();
	while (!got_config_)
		progress();
	const Ctl &c = config_;
	if (c.window < 1 || c.window > kMaxWindow || c.nsizes < 1 || c.nsizes > kMaxSizes)
		failed(fmt("bad CONFIG: window %u, %u sizes", c.window, c.nsizes));
	uint64_t max_size = 0;
	for (uint32_t i = 0; i < c.nsizes; i++) {
		sizes_.push_back(c.sizes[i]);
		iters_.push_back(c.iters[i]);
		max_size = std::max(max_size, c.sizes[i]);
	}
	window_ = (int)c.window;
	alloc_data(max_size);
	if (window_ != (int)c.window)
		failed("the window does not fit the server's buffer");
	for (int i = 0; i < window_; i++)
		post_data_rx(i);
	std::printf("window %d, %zu sizes\n", window_, sizes_.size());
	std::printf("# bw bytes iters secs MB/s msg/s errors\n");
	Ctl m{};
	m.type = READY;
	m.a = window_;
	send_ctl(m);

	uint64_t batch = std::max(1, window_ / 2), total = 0, total_bytes = 0;
	for (size_t i = 0; i < sizes_.size(); i++) {
		auto t0 = Clock::now();
		rx_size_idx_ = i;
		rx_count_ = 0;
		rx_errors_ = 0;
		while (rx_count_ < iters_[i]) {
			progress();
			if (rx_pending_ >= batch && rx_count_ < iters_[i]) {
				Ctl cr{};
				cr.type = CREDIT;
				cr.a = rx_pending_;
				rx_pending_ = 0;
				send_ctl(cr);
			}
		}
		double secs = std::chrono::duration<double>(Clock::now() - t0).count();
		Ctl r{};
		r.type = RESULT;
		r.a = i;
		r.b = rx_count_;
		r.c = rx_errors_;
		r.d = rx_pending_;
		rx_pending_ = 0;
		send_ctl(r);
		bw_line(sizes_[i], rx_count_, secs, rx_errors_);
		total += rx_count_;
		total_bytes += sizes_[i] * rx_count_;
	}
	rx_size_idx_ = sizes_.size();
	Ctl d{};
	d.type = DONE;
	d.b = total;
	d.c = rx_errors_total_;
	send_ctl(d);
	while (ctl_tx_done_ < ctl_tx_posted_)
		progress();
	shutdown_wait(false);
	if (rx_errors_total_)
		failed(fmt("%llu of %llu messages corrupt",
			   (unsigned long long)rx_errors_total_, (unsigned long long)total));
	std::printf("ok %llu messages, %llu bytes received intact\n",
		    (unsigned long long)total, (unsigned long long)total_bytes);
	return 0;
}

// The client disconnects after DONE; both must see FI_SHUTDOWN.
void Bench::shutdown_wait(bool initiate)
{
	if (initiate) {
		int ret = fi_shutdown(ep_, 0);
		if (ret)
			die("fi_shutdown", ret);
	}
	auto deadline = Clock::now() + std::chrono::seconds(10);
	while (Clock::now() < deadline) {
		// drive providers with manual progress; the flushed receives
		// complete in error (FI_ECANCELED) now, that is expected
		fi_cq_data_entry e[16];
		if (fi_cq_read(cq_, e, 16) == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			fi_cq_readerr(cq_, &err, 0);
		}
		fid_t fid = nullptr;
		uint32_t ev = eq_wait(&fid, 100, nullptr);
		if (ev == FI_SHUTDOWN && fid == &ep_->fid)
			return;
		if (ev)
			failed(fmt("expected FI_SHUTDOWN, got event %u", ev));
	}
	failed("no FI_SHUTDOWN event within 10 s of the end");
}

void Bench::close_all()
{
	fid *fids[] = { ep_ ? &ep_->fid : nullptr, data_mr_ ? &data_mr_->fid : nullptr,
			ctl_mr_ ? &ctl_mr_->fid : nullptr, cq_ ? &cq_->fid : nullptr,
			domain_ ? &domain_->fid : nullptr, pep_ ? &pep_->fid : nullptr,
			eq_ ? &eq_->fid : nullptr, fabric_ ? &fabric_->fid : nullptr };
	for (fid *f : fids)
		if (f) {
			int ret = fi_close(f);
			if (ret)
				die("fi_close", ret);
		}
	fi_freeinfo(info_);
	fi_freeinfo(hints_);
	std::free(data_);
	delete pat_;
}

int Bench::run()
{
	getinfo();
	int ret = opt_.server ? run_server() : run_client();
	close_all();
	return ret;
}

[[noreturn]] void usage()
{
	std::fprintf(stderr,
		     "usage: xiw_fi_msg_bw -s ADDR [-p PORT] [-f PROV] [--busy]\n"
		     "       xiw_fi_msg_bw ADDR [-p PORT] [-f PROV] [-S SIZE] [-I N] "
		     "[-W N] [--busy] [--selftest-corrupt]\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	Options o;

	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> const char * {
			if (i + 1 >= argc)
				usage();
			return argv[++i];
		};
		if (a == "-s") {
			o.server = true;
			o.addr = val();
		} else if (a == "-p") {
			o.port = val();
		} else if (a == "-f") {
			o.prov = val();
		} else if (a == "-S") {
			o.size = parse_size(val());
		} else if (a == "-I") {
			o.iters = parse_size(val());
		} else if (a == "-W") {
			o.window = std::atoi(val());
			if (o.window < 1 || o.window > kMaxWindow)
				usage();
		} else if (a == "--busy") {
			o.busy = true;
		} else if (a == "--selftest-corrupt") {
			o.corrupt = true;
		} else if (a[0] != '-' && o.addr.empty()) {
			o.addr = a;
		} else {
			usage();
		}
	}
	if (o.addr.empty())
		usage();
	setvbuf(stdout, nullptr, _IOLBF, 0);
	Bench b(o);
	return b.run();
}
