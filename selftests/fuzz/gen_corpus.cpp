// SPDX-License-Identifier: GPL-2.0
// xiw_fuzz_gencorpus: writes the seed corpus of the fuzz harnesses,
// frames built with kernel/xiw_wire.h's own structures and encoders
// (xiw_ddp_ctrl(), xiw_rdmap_ctrl(), xiw_term_ctrl(), xiw_term_len(),
// xiw_ddp_max_payload(), xiw_mpa_pad(), xiw_crc_update() and
// xiw_crc_trailer()), segmented at the MSS as xiw's TX does. The traffic
// is that of selftests/progs/xiw_wiregen.cpp (the tshark wire check): its
// ten operations with the same lengths, offsets, STags and payload
// pattern, plus the RTRs, the Terminates xiw sends and the commit-draft
// requests the header describes.
//
// Usage: xiw_fuzz_gencorpus OUTDIR   (writes OUTDIR/<harness>/<name>)
#include "kcompat.h"
#include "xiw_wire.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<u8>;
namespace fs = std::filesystem;

fs::path out_dir;
int nfiles;

void put(const std::string &harness, const std::string &name, const Bytes &b)
{
	fs::path d = out_dir / harness;
	fs::create_directories(d);
	std::ofstream f(d / name, std::ios::binary | std::ios::trunc);
	f.write(reinterpret_cast<const char *>(b.data()), b.size());
	if (!f) {
		std::perror((d / name).c_str());
		std::exit(1);
	}
	nfiles++;
}

template <typename T> void append(Bytes &b, const T &v, size_t len = sizeof(T))
{
	const u8 *p = reinterpret_cast<const u8 *>(&v);
	b.insert(b.end(), p, p + len);
}

// xiw_wiregen's payload pattern.
Bytes pattern(size_t len, int seed)
{
	Bytes b(len);
	for (size_t i = 0; i < len; i++)
		b[i] = 'A' + (i * 7 + seed) % 26;
	return b;
}

// One FPDU: header (from the MPA length on, @hlen bytes) with its
// ULPDU_Length set here, payload, pad and the CRC trailer (zero without
// CRC, as xiw sends it).
Bytes seal(const void *hdr, size_t hlen, const u8 *pl, size_t plen, bool crc)
{
	Bytes b;
	const u8 *h = static_cast<const u8 *>(hdr);
	const u32 ulpdu = hlen - XIW_MPA_HDR_LEN + plen;

	b.insert(b.end(), h, h + hlen);
	b[0] = ulpdu >> 8;
	b[1] = ulpdu & 0xff;
	b.insert(b.end(), pl, pl + plen);
	b.resize(b.size() + xiw_mpa_pad(ulpdu), 0);
	__le32 t = 0;
	if (crc)
		t = xiw_crc_trailer(xiw_crc_update(XIW_CRC32C_SEED, b.data(),
						   b.size()));
	append(b, t);
	return b;
}

struct Wire {
	u32 mss;
	bool crc;
	u32 msn[XIW_QN_COUNT] = { 1, 1, 1, 1 };

	static void untagged(struct xiw_ddp_untagged *h, unsigned op, u32 qn,
			     u32 msn, u32 mo, bool last)
	{
		h->ctrl.ddp = xiw_ddp_ctrl(false, last);
		h->ctrl.rdmap = xiw_rdmap_ctrl(op);
		h->qn = cpu_to_be32(qn);
		h->msn = cpu_to_be32(msn);
		h->mo = cpu_to_be32(mo);
	}

	// Send variants (QN 0), segmented at the MSS.
	std::vector<Bytes> send(unsigned op, const Bytes &data, u32 inv = 0)
	{
		std::vector<Bytes> v;
		const u32 max = xiw_ddp_max_payload(mss, false);
		u32 off = 0;

		do {
			const u32 n = std::min<u32>(max, data.size() - off);
			struct xiw_ddp_untagged h = {};

			untagged(&h, op, XIW_QN_SEND, msn[XIW_QN_SEND], off,
				 off + n == data.size());
			h.inval_stag = cpu_to_be32(inv);
			v.push_back(seal(&h, sizeof(h), data.data() + off, n,
					 crc));
			off += n;
		} while (off < data.size());
		msn[XIW_QN_SEND]++;
		return v;
	}

	// RDMA Write / Read Response (tagged), segmented at the MSS.
	std::vector<Bytes> tagged(unsigned op, u32 stag, u64 to,
				  const Bytes &data)
	{
		std::vector<Bytes> v;
		const u32 max = xiw_ddp_max_payload(mss, true);
		u32 off = 0;

		do {
			const u32 n = std::min<u32>(max, data.size() - off);
			struct xiw_ddp_tagged h = {};

			h.ctrl.ddp = xiw_ddp_ctrl(true, off + n == data.size());
			h.ctrl.rdmap = xiw_rdmap_ctrl(op);
			h.stag = cpu_to_be32(stag);
			h.to = cpu_to_be64(to + off);
			v.push_back(seal(&h, sizeof(h), data.data() + off, n,
					 crc));
			off += n;
		} while (off < data.size());
		return v;
	}

	Bytes read_req(u32 sink_stag, u64 sink_to, u32 len, u32 src_stag,
		       u64 src_to)
	{
		struct xiw_rdmap_rreq r = {};

		untagged(&r.hdr, XIW_RDMAP_OP_READ_REQ, XIW_QN_REQ,
			 msn[XIW_QN_REQ]++, 0, true);
		r.sink_stag = cpu_to_be32(sink_stag);
		r.sink_to = cpu_to_be64(sink_to);
		r.read_size = cpu_to_be32(len);
		r.src_stag = cpu_to_be32(src_stag);
		r.src_to = cpu_to_be64(src_to);
		return seal(&r, sizeof(r), nullptr, 0, crc);
	}

	Bytes atomic_req(u32 aop, u32 req_id, u32 stag, u64 to, u64 add,
			 u64 add_mask, u64 cmp, u64 cmp_mask)
	{
		struct xiw_rdmap_atomic_req r = {};

		untagged(&r.hdr, XIW_RDMAP_OP_ATOMIC_REQ, XIW_QN_REQ,
			 msn[XIW_QN_REQ]++, 0, true);
		r.aopcode = cpu_to_be32(aop);
		r.req_id = cpu_to_be32(req_id);
		r.stag = cpu_to_be32(stag);
		r.to = cpu_to_be64(to);
		r.add_swap = cpu_to_be64(add);
		r.add_swap_mask = cpu_to_be64(add_mask);
		r.cmp = cpu_to_be64(cmp);
		r.cmp_mask = cpu_to_be64(cmp_mask);
		return seal(&r, sizeof(r), nullptr, 0, crc);
	}

	Bytes atomic_resp(u32 req_id, u64 orig)
	{
		struct xiw_rdmap_atomic_resp r = {};

		untagged(&r.hdr, XIW_RDMAP_OP_ATOMIC_RESP, XIW_QN_RESP,
			 msn[XIW_QN_RESP]++, 0, true);
		r.req_id = cpu_to_be32(req_id);
		r.orig = cpu_to_be64(orig);
		return seal(&r, sizeof(r), nullptr, 0, crc);
	}

	Bytes imm(u64 data, bool se)
	{
		struct xiw_rdmap_imm r = {};

		untagged(&r.hdr, se ? XIW_RDMAP_OP_IMM_SE : XIW_RDMAP_OP_IMM,
			 XIW_QN_SEND, msn[XIW_QN_SEND]++, 0, true);
		r.data = cpu_to_be64(data);
		return seal(&r, sizeof(r), nullptr, 0, crc);
	}

	// Terminate carrying what xiw_tx_build_term() copies of @bad.
	Bytes term(u8 layer, u8 etype, u8 ecode, u8 hdrct, const Bytes &bad)
	{
		struct xiw_rdmap_term t = {};
		const struct xiw_term_code tc = { layer, etype, ecode, hdrct };
		const bool tag = bad.size() > 2 && (bad[2] & XIW_DDP_T);
		const u32 rlen = xiw_term_len(hdrct, tag);

		untagged(&t.hdr, XIW_RDMAP_OP_TERMINATE, XIW_QN_TERM,
			 msn[XIW_QN_TERM]++, 0, true);
		t.term_ctrl = xiw_term_ctrl(&tc);
		if (hdrct & (XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D))
			std::memcpy(&t.ddp_seg_len, bad.data(), 2);
		if (hdrct & XIW_TERM_HDRCT_D)
			std::memcpy(t.term_hdrs, bad.data() + 2,
				    rlen - XIW_RDMAP_TERM_MIN - 2);
		return seal(&t, XIW_UT_FPDU_HDR_LEN(rlen), nullptr, 0, crc);
	}

	Bytes flush_req(u32 stag, u32 len, u64 to, u32 flags)
	{
		struct xiw_rdmap_flush_req r = {};

		untagged(&r.hdr, XIW_RDMAP_OP_FLUSH_REQ, XIW_QN_REQ,
			 msn[XIW_QN_REQ]++, 0, true);
		r.sink_stag = cpu_to_be32(stag);
		r.sink_len = cpu_to_be32(len);
		r.sink_to = cpu_to_be64(to);
		r.flags = cpu_to_be32(flags);
		return seal(&r, sizeof(r), nullptr, 0, crc);
	}

	Bytes verify_req(u32 stag, u32 len, u64 to, const Bytes &hash)
	{
		struct xiw_rdmap_verify_req r = {};

		untagged(&r.hdr, XIW_RDMAP_OP_VERIFY_REQ, XIW_QN_REQ,
			 msn[XIW_QN_REQ]++, 0, true);
		r.sink_stag = cpu_to_be32(stag);
		r.sink_len = cpu_to_be32(len);
		r.sink_to = cpu_to_be64(to);
		// the fixed part; the hash goes on the wire as payload
		return seal(&r, offsetof(struct xiw_rdmap_verify_req, hash),
			    hash.data(), hash.size(), crc);
	}

	Bytes awrite_req(u32 stag, u64 to, u64 data)
	{
		struct xiw_rdmap_awrite_req r = {};

		untagged(&r.hdr, XIW_RDMAP_OP_ATOMIC_WRITE_REQ, XIW_QN_REQ,
			 msn[XIW_QN_REQ]++, 0, true);
		r.sink_stag = cpu_to_be32(stag);
		r.sink_len = cpu_to_be32(XIW_ATOMIC_WRITE_LEN);
		r.sink_to = cpu_to_be64(to);
		r.data = cpu_to_be64(data);
		return seal(&r, sizeof(r), nullptr, 0, crc);
	}

	Bytes bare_resp(unsigned op)
	{
		struct xiw_ddp_untagged h = {};

		untagged(&h, op, XIW_QN_RESP, msn[XIW_QN_RESP]++, 0, true);
		return seal(&h, sizeof(h), nullptr, 0, crc);
	}
};

// xiw_wiregen's region: srv at 0x7f0000001000, STag 0x1234500; cli's
// read sink at 0x7f0000100000 + 0x3000, lkey 0x2345600.
constexpr u64 kSrv = 0x7f0000001000ULL, kCli = 0x7f0000100000ULL;
constexpr u32 kSrvStag = 0x01234500, kCliStag = 0x02345600;
constexpr u32 kBogusStag = 0x00c0ffee;

struct Session {
	std::vector<std::pair<std::string, std::vector<Bytes>>> to_srv,
		to_cli;
};

// The ten operations of xiw_wiregen plus the peer-to-peer RTR, one
// direction per list, as xiw frames them at @mss.
Session wiregen(u32 mss, bool crc)
{
	Wire c{ mss, crc }, s{ mss, crc };
	Session x;

	x.to_srv.push_back({ "rtr-write", c.tagged(XIW_RDMAP_OP_WRITE, 0, 0,
						   {}) });
	x.to_srv.push_back({ "send-100", c.send(XIW_RDMAP_OP_SEND,
						pattern(100, 1)) });
	x.to_srv.push_back({ "send-se-33", c.send(XIW_RDMAP_OP_SEND_SE,
						  pattern(33, 2)) });
	x.to_srv.push_back({ "send-5000", c.send(XIW_RDMAP_OP_SEND,
						 pattern(5000, 3)) });
	x.to_srv.push_back({ "write-3000",
			     c.tagged(XIW_RDMAP_OP_WRITE, kSrvStag,
				      kSrv + 0x1000, pattern(3000, 4)) });
	x.to_srv.push_back({ "read-req-4000",
			     { c.read_req(kCliStag, kCli + 0x3000, 4000,
					  kSrvStag, kSrv + 0x2000) } });
	x.to_cli.push_back({ "read-resp-4000",
			     s.tagged(XIW_RDMAP_OP_READ_RESP, kCliStag,
				      kCli + 0x3000, pattern(4000, 5)) });
	x.to_srv.push_back({ "fetch-add",
			     { c.atomic_req(XIW_AOP_FETCH_ADD, 1, kSrvStag,
					    kSrv + 0x4000, 5, 0, 0, ~0ULL) } });
	x.to_cli.push_back({ "fetch-add-resp", { s.atomic_resp(1, 1000) } });
	x.to_srv.push_back({ "cmp-swap",
			     { c.atomic_req(XIW_AOP_CMP_SWAP, 2, kSrvStag,
					    kSrv + 0x4008, 88, ~0ULL, 77,
					    ~0ULL) } });
	x.to_cli.push_back({ "cmp-swap-resp", { s.atomic_resp(2, 77) } });
	auto w = c.tagged(XIW_RDMAP_OP_WRITE, kSrvStag, kSrv + 0x5000,
			  pattern(200, 8));
	w.push_back(c.imm(0xa5a5f00dULL, false));
	x.to_srv.push_back({ "write-imm-200", w });
	x.to_srv.push_back({ "imm-se", { c.imm(0x0123456789abcdefULL,
					       true) } });
	auto inv = c.send(XIW_RDMAP_OP_SEND_INV, pattern(64, 10), kBogusStag);
	x.to_srv.push_back({ "send-inv-64", inv });
	// srv's answer to the Send with Invalidate (RDMAP / Remote
	// Protection / cannot invalidate, M|D with the offending header).
	Bytes bad(inv[0].begin(), inv[0].begin() + XIW_UT_FPDU_HDR_LEN(0));
	x.to_cli.push_back({ "term-cannot-inv",
			     { s.term(XIW_TERM_LAYER_RDMAP,
				      XIW_RDMAP_ET_REMOTE_PROT,
				      XIW_RDMAP_EC_CANNOT_INVALIDATE,
				      XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D,
				      bad) } });
	return x;
}

Bytes cat(const std::vector<Bytes> &v)
{
	Bytes b;
	for (const Bytes &f : v)
		b.insert(b.end(), f.begin(), f.end());
	return b;
}

void gen_fpdus()
{
	int n = 0;

	// Every FPDU of the session, MSS 1448 with CRC, and MSS 64 KiB
	// without: ddp_hdr takes single FPDUs.
	for (auto [mss, crc] : { std::pair{ 1448U, true },
				 std::pair{ 65536U, false } }) {
		Session x = wiregen(mss, crc);
		for (auto *dir : { &x.to_srv, &x.to_cli })
			for (auto &[name, fpdus] : *dir)
				for (size_t i = 0; i < fpdus.size(); i++) {
					if (i && i + 1 < fpdus.size())
						continue; // first and last
					char nm[96];
					std::snprintf(nm, sizeof(nm),
						      "%02d-%s-%zu%s", n++,
						      name.c_str(), i,
						      crc ? "-crc" : "");
					put("ddp_hdr", nm, fpdus[i]);
				}
	}
	// Commit-draft requests and responses the header describes.
	Wire c{ 1448, true };
	put("ddp_hdr", "50-flush-req", c.flush_req(kSrvStag, 4096, kSrv,
						    XIW_FLUSH_GLOBAL));
	put("ddp_hdr", "51-verify-req", c.verify_req(kSrvStag, 4096, kSrv,
						      pattern(32, 11)));
	put("ddp_hdr", "52-awrite-req", c.awrite_req(kSrvStag, kSrv + 8, 42));
	put("ddp_hdr", "53-flush-resp", c.bare_resp(XIW_RDMAP_OP_FLUSH_RESP));
	put("ddp_hdr", "54-awrite-resp",
	    c.bare_resp(XIW_RDMAP_OP_ATOMIC_WRITE_RESP));
	put("ddp_hdr", "55-rtr-read", c.read_req(0, 0, 0, XIW_RTR_READ_STAG,
						  0));

	// Streams: control byte (bit 0 = CRC) + each direction's FPDUs.
	n = 0;
	for (auto [mss, crc] : { std::pair{ 1448U, true },
				 std::pair{ 1448U, false },
				 std::pair{ 65536U, true },
				 std::pair{ 9000U, false } }) {
		Session x = wiregen(mss, crc);
		for (auto *dir : { &x.to_srv, &x.to_cli }) {
			Bytes all = { u8(crc ? 0x01 : 0x00) };
			for (auto &[name, fpdus] : *dir) {
				Bytes m = cat(fpdus);
				all.insert(all.end(), m.begin(), m.end());
			}
			char nm[64];
			std::snprintf(nm, sizeof(nm), "%02d-%s-mss%u%s", n++,
				      dir == &x.to_srv ? "to-srv" : "to-cli",
				      mss, crc ? "-crc" : "");
			put("fpdu_stream", nm, all);
		}
	}
	// Each message alone at MSS 1448 with CRC.
	Session x = wiregen(1448, true);
	for (auto *dir : { &x.to_srv, &x.to_cli })
		for (auto &[name, fpdus] : *dir) {
			Bytes m = { 0x01 };
			Bytes b = cat(fpdus);
			m.insert(m.end(), b.begin(), b.end());
			put("fpdu_stream", std::to_string(10 + n++) + "-" + name,
			    m);
		}
}

void gen_term()
{
	Wire w{ 1448, true };
	const Session x = wiregen(1448, true);
	// Offending headers: an untagged Send, a tagged Write, a Read Request.
	const Bytes send(x.to_srv[1].second[0].begin(),
			 x.to_srv[1].second[0].begin() + XIW_UT_FPDU_HDR_LEN(0));
	const Bytes write(x.to_srv[4].second[0].begin(),
			  x.to_srv[4].second[0].begin() +
				  XIW_MPA_HDR_LEN + XIW_DDP_TAGGED_HDR_LEN);
	const Bytes rreq(x.to_srv[5].second[0].begin(),
			 x.to_srv[5].second[0].begin() +
				 XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_RREQ_LEN));
	const u8 MD = XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D;
	struct T {
		const char *name;
		u8 layer, etype, ecode, hdrct;
		const Bytes *bad;
	} ts[] = {
		{ "crc", XIW_TERM_LAYER_LLP, XIW_MPA_ET_MPA, XIW_MPA_EC_CRC, MD,
		  &send },
		{ "short-seg", XIW_TERM_LAYER_LLP, XIW_MPA_ET_MPA,
		  XIW_MPA_EC_MARKER_LEN, 0, &send },
		{ "no-rtr", XIW_TERM_LAYER_LLP, XIW_MPA_ET_MPA,
		  XIW_MPA_EC_NO_MATCHING_RTR, 0, &send },
		{ "ddp-t-stag", XIW_TERM_LAYER_DDP, XIW_DDP_ET_TAGGED,
		  XIW_DDP_EC_T_INV_STAG, MD, &write },
		{ "ddp-t-bounds", XIW_TERM_LAYER_DDP, XIW_DDP_ET_TAGGED,
		  XIW_DDP_EC_T_BASE_BOUNDS, MD, &write },
		{ "ddp-ut-qn", XIW_TERM_LAYER_DDP, XIW_DDP_ET_UNTAGGED,
		  XIW_DDP_EC_UT_INV_QN, MD, &send },
		{ "ddp-ut-msn", XIW_TERM_LAYER_DDP, XIW_DDP_ET_UNTAGGED,
		  XIW_DDP_EC_UT_MSN_RANGE, MD, &send },
		{ "ddp-ut-nobuf", XIW_TERM_LAYER_DDP, XIW_DDP_ET_UNTAGGED,
		  XIW_DDP_EC_UT_MSN_NO_BUF, MD, &send },
		{ "ddp-ut-long", XIW_TERM_LAYER_DDP, XIW_DDP_ET_UNTAGGED,
		  XIW_DDP_EC_UT_TOO_LONG, MD, &send },
		{ "ird-full", XIW_TERM_LAYER_DDP, XIW_DDP_ET_UNTAGGED,
		  XIW_DDP_EC_UT_MSN_RANGE, MD | XIW_TERM_HDRCT_R, &rreq },
		{ "rdmap-access-rreq", XIW_TERM_LAYER_RDMAP,
		  XIW_RDMAP_ET_REMOTE_PROT, XIW_RDMAP_EC_ACCESS,
		  MD | XIW_TERM_HDRCT_R, &rreq },
		{ "rdmap-access-write", XIW_TERM_LAYER_RDMAP,
		  XIW_RDMAP_ET_REMOTE_PROT, XIW_RDMAP_EC_ACCESS, MD, &write },
		{ "rdmap-version", XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_OP,
		  XIW_RDMAP_EC_VERSION, MD, &send },
		{ "rdmap-opcode", XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_OP,
		  XIW_RDMAP_EC_OPCODE, MD, &send },
		{ "atomic-misaligned", XIW_TERM_LAYER_RDMAP,
		  XIW_RDMAP_ET_REMOTE_OP, XIW_RDMAP_EC_CATASTROPHIC_STREAM, MD,
		  &send },
		{ "catastrophic", XIW_TERM_LAYER_RDMAP,
		  XIW_RDMAP_ET_CATASTROPHIC, 0, 0, &send },
		{ "cannot-inv", XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ET_REMOTE_PROT,
		  XIW_RDMAP_EC_CANNOT_INVALIDATE, MD, &send },
		{ "m-only", XIW_TERM_LAYER_DDP, XIW_DDP_ET_UNTAGGED,
		  XIW_DDP_EC_UT_INV_MO, XIW_TERM_HDRCT_M, &send },
	};
	int n = 0;
	for (const T &t : ts) {
		w.crc = n % 2 == 0;
		put("term", std::to_string(10 + n++) + "-" + t.name,
		    w.term(t.layer, t.etype, t.ecode, t.hdrct, *t.bad));
	}
	// Not a Terminate: the harness must pass over them.
	put("term", "40-send", x.to_srv[1].second[0]);
	put("term", "41-rreq", x.to_srv[5].second[0]);
}

void gen_atomic()
{
	Wire w{ 1448, true };
	const u64 t = kSrv + 0x4000;
	struct A {
		const char *name;
		u32 aop;
		u64 to, add, add_mask, cmp, cmp_mask;
	} as[] = {
		{ "fadd", XIW_AOP_FETCH_ADD, t, 5, 0, 0, ~0ULL },
		{ "fadd-neg", XIW_AOP_FETCH_ADD, t, ~0ULL, 0, 0, ~0ULL },
		{ "fadd-masked-16", XIW_AOP_FETCH_ADD, t, 0x0001000100010001ULL,
		  0x8000800080008000ULL, 0, ~0ULL },
		{ "fadd-masked-all", XIW_AOP_FETCH_ADD, t, 0x5555, ~0ULL, 0,
		  ~0ULL },
		{ "cswap", XIW_AOP_CMP_SWAP, t + 8, 88, ~0ULL, 77, ~0ULL },
		{ "cswap-masked", XIW_AOP_CMP_SWAP, t + 8, 0xff00, 0xff00, 0x77,
		  0xff },
		{ "cswap-nomatch", XIW_AOP_CMP_SWAP, t, 1, ~0ULL, 2, ~0ULL },
		{ "misaligned", XIW_AOP_FETCH_ADD, t + 4, 1, 0, 0, ~0ULL },
		{ "aop-reserved", XIW_AOP_RESERVED, t, 1, 0, 0, ~0ULL },
		{ "aop-upper-bits", 0xfffffff2U, t, 1, ~0ULL, 0, ~0ULL },
	};
	u32 n = 0;
	for (const A &a : as) {
		put("atomic", std::to_string(10 + n) + "-" + a.name,
		    w.atomic_req(a.aop, n + 1, kSrvStag, a.to, a.add,
				 a.add_mask, a.cmp, a.cmp_mask));
		n++;
	}
	put("atomic", "30-resp", w.atomic_resp(1, 1000));
}

Bytes rr(bool request, u8 flags, u8 rev, const u16 *io, const Bytes &pd)
{
	struct xiw_mpa_rr h = {};
	Bytes b;

	std::memcpy(h.key, request ? XIW_MPA_KEY_REQ : XIW_MPA_KEY_REP,
		    XIW_MPA_KEY_LEN);
	h.flags = flags;
	h.rev = rev;
	h.pd_len = cpu_to_be16((io ? 4 : 0) + pd.size());
	append(b, h);
	if (io) {
		struct xiw_mpa_v2 v2 = { cpu_to_be16(io[0]),
					 cpu_to_be16(io[1]) };
		append(b, v2);
	}
	b.insert(b.end(), pd.begin(), pd.end());
	return b;
}

void gen_mpa()
{
	const u8 C = XIW_MPA_FLAG_C, E = XIW_MPA_FLAG_ENHANCED,
		 R = XIW_MPA_FLAG_R, M = XIW_MPA_FLAG_M;
	// xiw_wiregen's private data: the srv region (addr, rkey), packed.
	Bytes region(12);
	const u64 a = cpu_to_be64(kSrv);
	const u32 k = cpu_to_be32(kSrvStag);
	std::memcpy(region.data(), &a, 8);
	std::memcpy(region.data() + 8, &k, 4);
	const u16 p2p[2] = { XIW_MPA_V2_P2P | 4,
			     XIW_MPA_V2_RTR_WRITE | XIW_MPA_V2_RTR_READ | 4 };
	const u16 rep_w[2] = { XIW_MPA_V2_P2P | 4, XIW_MPA_V2_RTR_WRITE | 4 };
	const u16 rep_r[2] = { XIW_MPA_V2_P2P | 16, XIW_MPA_V2_RTR_READ | 8 };
	const u16 send_rtr[2] = { XIW_MPA_V2_P2P | XIW_MPA_V2_RTR_SEND | 1,
				  1 };
	const u16 plain[2] = { 128, 128 };
	const u16 zero[2] = { 0, 0 };
	Wire w{ 1448, false };
	const Bytes rtr = w.tagged(XIW_RDMAP_OP_WRITE, 0, 0, {})[0];
	Bytes rep_then_rtr = rr(false, E, 2, rep_w, region);
	rep_then_rtr.insert(rep_then_rtr.end(), rtr.begin(), rtr.end());

	put("mpa", "10-req-rev1", rr(true, 0, 1, nullptr, {}));
	put("mpa", "11-req-rev1-crc-pd", rr(true, C, 1, nullptr, region));
	put("mpa", "12-req-rev2-p2p", rr(true, E, 2, p2p, {}));
	put("mpa", "13-req-rev2-p2p-crc-pd", rr(true, C | E, 2, p2p, region));
	put("mpa", "14-req-rev2-send-rtr", rr(true, E, 2, send_rtr, {}));
	put("mpa", "15-req-rev2-plain", rr(true, E, 2, plain, pattern(256, 1)));
	put("mpa", "16-req-rev2-not-enh", rr(true, C, 2, nullptr, region));
	put("mpa", "17-req-markers", rr(true, M | C, 1, nullptr, {}));
	put("mpa", "18-req-siw-gso", rr(true, E | XIW_MPA_FLAG_SIW_GSO, 2,
					p2p, {}));
	put("mpa", "20-rep-rev1", rr(false, 0, 1, nullptr, {}));
	put("mpa", "21-rep-rev1-crc-pd", rr(false, C, 1, nullptr, region));
	put("mpa", "22-rep-rev2-rtr-write", rr(false, E, 2, rep_w, region));
	put("mpa", "23-rep-rev2-rtr-read-crc", rr(false, C | E, 2, rep_r, {}));
	put("mpa", "24-rep-reject", rr(false, R, 1, nullptr, pattern(40, 2)));
	put("mpa", "25-rep-reject-enh", rr(false, R | E, 2, zero, {}));
	put("mpa", "26-rep-then-rtr", rep_then_rtr);
	put("mpa", "27-rep-pd-max", rr(false, E, 2, plain,
				       pattern(XIW_MPA_PD_MAX - 4, 3)));
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	out_dir = argv[1];
	gen_fpdus();
	gen_term();
	gen_atomic();
	gen_mpa();
	std::printf("%d seed files in %s\n", nfiles, argv[1]);
	return 0;
}
