/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xiw - iWARP wire formats: MPA (RFC 5044, RFC 6581), DDP (RFC 5041),
 * RDMAP (RFC 5040, RFC 7306, draft-talpey-rdma-commit-01), plus the pure
 * helpers both the kernel module and the C++ host tests use (framing
 * lengths, MPA CRC, masked atomics, header validation).
 *
 * The only definition of these formats in the tree. It is compiled
 * unchanged by selftests/host through kcompat.h, so it may use only what
 * that shim provides. Every multi-byte field is big-endian except the MPA
 * CRC trailer (see "MPA CRC" below).
 *
 * Headers are described from the start of the FPDU, i.e. including the
 * 2-byte MPA ULPDU_Length in front of the DDP header: with that prefix all
 * DDP/RDMAP fields are naturally aligned except a few 64-bit ones at
 * offset 4 mod 8. Only those are declared __packed __aligned(4); the
 * structs stay 4-byte aligned and all other members keep natural layout.
 */
#ifndef XIW_WIRE_H
#define XIW_WIRE_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#include <linux/compiler.h>
#include <linux/stddef.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/crc32c.h>
#include <asm/byteorder.h>
#else
#include "kcompat.h"
#endif

/* ------------------------------------------------------------------------
 * MPA connection setup (RFC 5044 section 7, RFC 6581)
 */
#define XIW_MPA_KEY_LEN		16
#define XIW_MPA_KEY_REQ		"MPA ID Req Frame"
#define XIW_MPA_KEY_REP		"MPA ID Rep Frame"
#define XIW_MPA_REV1		1
#define XIW_MPA_REV2		2	/* RFC 6581 enhanced setup */

/* Flags byte of the MPA Request/Reply frame. */
#define XIW_MPA_FLAG_M		0x80	/* markers */
#define XIW_MPA_FLAG_C		0x40	/* CRC */
#define XIW_MPA_FLAG_R		0x20	/* reject (Reply only) */
#define XIW_MPA_FLAG_ENHANCED	0x10	/* RFC 6581: IRD/ORD block present */
/*
 * siw sets this reserved bit ("GSO exp", 0x0800 of its 16-bit view) to
 * offer FPDUs larger than the MSS. xiw never sends it and ignores it.
 */
#define XIW_MPA_FLAG_SIW_GSO	0x08
#define XIW_MPA_FLAG_RES_MASK	0x0f

/*
 * PD_Length may be up to 512 by RFC 5044 (it counts the RFC 6581 block).
 * The kernel's iw_cm passes at most RDMA_MAX_PRIVATE_DATA (256) bytes of
 * ULP private data, so xiw sends at most 4 + 256 and accepts up to 512.
 */
#define XIW_MPA_PD_MAX		512
#define XIW_IWCM_PD_MAX		256

struct xiw_mpa_rr {
	u8 key[XIW_MPA_KEY_LEN];
	u8 flags;
	u8 rev;
	__be16 pd_len;
};

/* RFC 6581: first 4 bytes of the private data when FLAG_ENHANCED is set. */
struct xiw_mpa_v2 {
	__be16 ird;
	__be16 ord;
};

#define XIW_MPA_V2_P2P		0x8000	/* ird: peer-to-peer, an RTR follows */
#define XIW_MPA_V2_RTR_SEND	0x4000	/* ird: zero-length Send RTR */
#define XIW_MPA_V2_RTR_WRITE	0x8000	/* ord: zero-length RDMA Write RTR */
#define XIW_MPA_V2_RTR_READ	0x4000	/* ord: zero-length RDMA Read RTR */
#define XIW_MPA_V2_IRD_ORD_MASK	0x3fff
/* STag of the zero-length RTR Read; some RNICs (Chelsio) reject STag 0. */
#define XIW_RTR_READ_STAG	1

/* ------------------------------------------------------------------------
 * MPA FPDU framing (RFC 5044 section 4)
 *
 * FPDU = ULPDU_Length (2) | ULPDU (DDP segment) | pad to 4 | CRC (4).
 * The CRC field is always present; it is zero when CRC was not negotiated.
 */
#define XIW_MPA_HDR_LEN		2
#define XIW_MPA_CRC_LEN		4
#define XIW_MPA_MIN_FPDU	8	/* empty ULPDU: 2 + 0 + 2 pad + 4 */
/* Largest ULPDU_Length whose FPDU needs no pad (the field is 16 bits). */
#define XIW_MPA_ULPDU_MAX	65534

/* Markers (RFC 5044): defined for reference only, xiw sends none. */
#define XIW_MPA_MARKER_INTERVAL	512
#define XIW_MPA_MARKER_LEN	4

struct xiw_mpa_marker {
	__be16 rsvd;
	__be16 fpduptr;	/* octets back from the marker to the FPDU start */
};

/* Pad octets after a ULPDU of @ulpdu_len so the FPDU is 4-aligned. */
static inline u32 xiw_mpa_pad(u32 ulpdu_len)
{
	return (4 - ((ulpdu_len + XIW_MPA_HDR_LEN) & 3)) & 3;
}

/* Octets on the wire for a ULPDU of @ulpdu_len (no markers). */
static inline u32 xiw_mpa_fpdu_len(u32 ulpdu_len)
{
	return XIW_MPA_HDR_LEN + ulpdu_len + xiw_mpa_pad(ulpdu_len) +
	       XIW_MPA_CRC_LEN;
}

/* Largest ULPDU whose FPDU fits in @mss octets without markers, 0 if none. */
static inline u32 xiw_mpa_mulpdu(u32 mss)
{
	u32 m;

	if (mss < XIW_MPA_MIN_FPDU)
		return 0;
	m = ((mss - XIW_MPA_CRC_LEN) & ~3U) - XIW_MPA_HDR_LEN;
	return m > XIW_MPA_ULPDU_MAX ? XIW_MPA_ULPDU_MAX : m;
}

/*
 * RFC 5044 MULPDU with markers enabled, for an effective MSS @emss:
 * EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4). Reference only.
 */
static inline u32 xiw_mpa_mulpdu_markers(u32 emss)
{
	u32 ovh = 6 + 4 * ((emss + XIW_MPA_MARKER_INTERVAL - 1) /
			   XIW_MPA_MARKER_INTERVAL) + emss % 4;

	return emss > ovh ? emss - ovh : 0;
}

/*
 * The checks of a received MPA Request or Reply header (@request: which
 * one is expected), made before its private data is read: the key of that
 * frame, then PD_Length at most XIW_MPA_PD_MAX (RFC 5044 section 7.1 caps
 * private data at 512 octets). *@pd_len is set to the header's PD_Length
 * either way.
 *
 * Return: 0, -EPROTO (another key) or -EMSGSIZE (PD_Length too long).
 */
static inline int xiw_mpa_rr_check(const struct xiw_mpa_rr *rr, bool request,
				   u16 *pd_len)
{
	*pd_len = be16_to_cpu(rr->pd_len);
	if (memcmp(rr->key, request ? XIW_MPA_KEY_REQ : XIW_MPA_KEY_REP,
		   XIW_MPA_KEY_LEN))
		return -EPROTO;
	if (*pd_len > XIW_MPA_PD_MAX)
		return -EMSGSIZE;
	return 0;
}

/* ------------------------------------------------------------------------
 * MPA CRC
 *
 * CRC32c (Castagnoli) over ULPDU_Length, ULPDU and pad, seeded with ~0 and
 * inverted at the end, exactly as the iSCSI digests (RFC 3720). The value
 * is transmitted least significant byte first: RFC 3720 B.4 gives the CRC
 * of 32 zero bytes, 0x8a9136aa, as the bytes "aa 36 91 8a", and Linux's
 * crc32c shash (used by siw) stores ~crc with put_unaligned_le32(). So the
 * trailer is a __le32, not the __be32 a "network byte order" reading would
 * suggest; selftests/host pins this against the RFC 3720 vectors.
 *
 * crc32c() is the raw kernel primitive (no pre/post inversion); the host
 * shim implements the same function.
 */
#define XIW_CRC32C_SEED		0xffffffffU

static inline u32 xiw_crc_update(u32 crc, const void *p, size_t len)
{
	return crc32c(crc, p, len);
}

/* Trailer value for a running CRC @crc over header, payload and pad. */
static inline __le32 xiw_crc_trailer(u32 crc)
{
	return cpu_to_le32(~crc);
}

/* ------------------------------------------------------------------------
 * DDP (RFC 5041 section 4)
 */
#define XIW_DDP_VERSION		1
#define XIW_DDP_T		0x80	/* tagged */
#define XIW_DDP_L		0x40	/* last segment of the message */
#define XIW_DDP_RSVD_MASK	0x3c	/* zero on send, ignored on receive */
#define XIW_DDP_DV_MASK		0x03

#define XIW_DDP_TAGGED_HDR_LEN		14
#define XIW_DDP_UNTAGGED_HDR_LEN	18

/* Untagged queue numbers (RFC 5040, RFC 7306, commit draft). */
enum xiw_ddp_qn {
	XIW_QN_SEND = 0,	/* Send variants, Immediate Data */
	XIW_QN_REQ = 1,		/* Read/Atomic/Flush/Verify/Atomic Write req */
	XIW_QN_TERM = 2,	/* Terminate */
	XIW_QN_RESP = 3,	/* Atomic/Flush/Verify/Atomic Write responses */
	XIW_QN_COUNT = 4,
};

static inline u8 xiw_ddp_ctrl(bool tagged, bool last)
{
	return (tagged ? XIW_DDP_T : 0) | (last ? XIW_DDP_L : 0) |
	       XIW_DDP_VERSION;
}

static inline u32 xiw_ddp_hdr_len(u8 ddp_ctrl)
{
	return (ddp_ctrl & XIW_DDP_T) ? XIW_DDP_TAGGED_HDR_LEN :
					XIW_DDP_UNTAGGED_HDR_LEN;
}

/* DDP payload per segment when FPDUs must fit @mss (no markers). */
static inline u32 xiw_ddp_max_payload(u32 mss, bool tagged)
{
	u32 m = xiw_mpa_mulpdu(mss);
	u32 h = tagged ? XIW_DDP_TAGGED_HDR_LEN : XIW_DDP_UNTAGGED_HDR_LEN;

	return m > h ? m - h : 0;
}

/* ------------------------------------------------------------------------
 * RDMAP control and opcodes (RFC 5040 section 4, RFC 7306 section 4,
 * draft-talpey-rdma-commit-01 section 3.1 and 6)
 *
 * RDMAP control byte: RV (2 bits, 01b) | Rsv (2 bits, zero on send and
 * ignored on receive) | Opcode (4 bits). RFC 5040 + RFC 7306 + the commit
 * draft assign all 16 opcodes 0x0-0xf; the draft's Atomic Write Request
 * (0x10) and Response (0x11) do not fit, although the draft claims to
 * change neither field.
 *
 * xiw encoding of 0x10/0x11: RV = 11b, Opcode = low nibble, i.e. control
 * bytes 0xc0 (Atomic Write Request) and 0xc1 (Atomic Write Response). The
 * high RV bit acts as opcode bit 4. Why not the Rsv bits (the draft's
 * 5-bit binary would suggest Rsv = 01b): receivers ignore Rsv, so an older
 * peer would take 0x10 for RDMA Write and 0x11 for Read Request. Every
 * RFC 5040 receiver must check RV (siw does, right after DDP version) and
 * answers RV != 01b with Terminate RDMAP / Remote Operation / Invalid
 * RDMAP version (0x0/0x2/0x05): a Remote Operation Error, which is what the
 * draft's section 3.1.4 expects an unsupporting peer to report. RV = 00b is
 * avoided because RDMAC-era RNICs speak that version; 10b is left for a
 * real RDMAP version 2. The request also stays untagged (T = 0) on QN 1,
 * so even a peer ignoring RV cannot place it through the tagged path.
 */
#define XIW_RDMAP_VERSION	1
#define XIW_RDMAP_RV_EXT	3	/* xiw: opcodes 0x10-0x11 */
#define XIW_RDMAP_RV_SHIFT	6
#define XIW_RDMAP_RSV_MASK	0x30
#define XIW_RDMAP_OPCODE_MASK	0x0f

/* Logical opcodes; 0x10 and up are encoded with RV = 11b (see above). */
enum xiw_rdmap_op {
	XIW_RDMAP_OP_WRITE = 0x0,
	XIW_RDMAP_OP_READ_REQ = 0x1,
	XIW_RDMAP_OP_READ_RESP = 0x2,
	XIW_RDMAP_OP_SEND = 0x3,
	XIW_RDMAP_OP_SEND_INV = 0x4,
	XIW_RDMAP_OP_SEND_SE = 0x5,
	XIW_RDMAP_OP_SEND_SE_INV = 0x6,
	XIW_RDMAP_OP_TERMINATE = 0x7,
	XIW_RDMAP_OP_IMM = 0x8,			/* RFC 7306 */
	XIW_RDMAP_OP_IMM_SE = 0x9,		/* RFC 7306 */
	XIW_RDMAP_OP_ATOMIC_REQ = 0xa,		/* RFC 7306 */
	XIW_RDMAP_OP_ATOMIC_RESP = 0xb,		/* RFC 7306 */
	XIW_RDMAP_OP_FLUSH_REQ = 0xc,		/* commit draft */
	XIW_RDMAP_OP_FLUSH_RESP = 0xd,		/* commit draft */
	XIW_RDMAP_OP_VERIFY_REQ = 0xe,		/* commit draft */
	XIW_RDMAP_OP_VERIFY_RESP = 0xf,		/* commit draft */
	XIW_RDMAP_OP_ATOMIC_WRITE_REQ = 0x10,	/* commit draft, RV = 11b */
	XIW_RDMAP_OP_ATOMIC_WRITE_RESP = 0x11,	/* commit draft, RV = 11b */
	XIW_RDMAP_OP_COUNT = 0x12,
};

/* Opcode sets for the receive check (bit n = logical opcode n). */
#define XIW_OPMASK_RFC5040	0x000ffU
#define XIW_OPMASK_IMM		0x00300U
#define XIW_OPMASK_ATOMIC	0x00c00U
#define XIW_OPMASK_FLUSH	0x03000U
#define XIW_OPMASK_VERIFY	0x0c000U
#define XIW_OPMASK_ATOMIC_WRITE	0x30000U
#define XIW_OPMASK_ALL		0x3ffffU
/*
 * What xiw's RX accepts (kernel/xiw_rx.c, and the fuzz harnesses that
 * drive its parsing): RFC 5040, the RFC 7306 extensions (Immediate Data,
 * atomics) and the commit draft (Flush, Verify, Atomic Write).
 */
#define XIW_OPMASK_RX	(XIW_OPMASK_RFC5040 | XIW_OPMASK_IMM |		\
			 XIW_OPMASK_ATOMIC | XIW_OPMASK_FLUSH |		\
			 XIW_OPMASK_VERIFY | XIW_OPMASK_ATOMIC_WRITE)

static inline u8 xiw_rdmap_ctrl(unsigned int op)
{
	if (op >= 0x10)
		return (XIW_RDMAP_RV_EXT << XIW_RDMAP_RV_SHIFT) | (op & 0x0f);
	return (XIW_RDMAP_VERSION << XIW_RDMAP_RV_SHIFT) | (op & 0x0f);
}

/* Logical opcode of an RDMAP control byte, -1 for an RV xiw rejects. */
static inline int xiw_rdmap_opcode(u8 rdmap_ctrl)
{
	unsigned int rv = rdmap_ctrl >> XIW_RDMAP_RV_SHIFT;
	unsigned int op = rdmap_ctrl & XIW_RDMAP_OPCODE_MASK;

	if (rv == XIW_RDMAP_VERSION)
		return op;
	if (rv == XIW_RDMAP_RV_EXT && op <= 1)
		return 0x10 + op;
	return -1;
}

/* ------------------------------------------------------------------------
 * FPDU headers: MPA length + DDP header + RDMAP header
 */
struct xiw_fpdu_ctrl {
	__be16 mpa_len;	/* ULPDU_Length: DDP header + payload */
	u8 ddp;		/* T | L | Rsvd | DV */
	u8 rdmap;	/* RV | Rsv | Opcode (DDP's RsvdULP[0:7] / RsvdULP) */
};

/* Tagged: RDMA Write, RDMA Read Response. */
struct xiw_ddp_tagged {
	struct xiw_fpdu_ctrl ctrl;
	__be32 stag;
	__be64 to;
};

/* Untagged. */
struct xiw_ddp_untagged {
	struct xiw_fpdu_ctrl ctrl;
	__be32 inval_stag;	/* RsvdULP[8:39]: Send with Invalidate, else 0 */
	__be32 qn;
	__be32 msn;		/* per QN, starts at 1, wraps mod 2^32 */
	__be32 mo;
};

/* RDMA Read Request (QN 1), RFC 5040 section 4. */
struct xiw_rdmap_rreq {
	struct xiw_ddp_untagged hdr;
	__be32 sink_stag;
	__be64 sink_to;
	__be32 read_size;
	__be32 src_stag;
	__be64 src_to;
};

/*
 * Terminate (QN 2), RFC 5040 section 4: Terminate Control, then "if
 * any" the DDP Segment Length of the offending segment (present when M or
 * D is set), its DDP header (14 or 18 bytes, D) and, for an errored RDMA
 * Read Request, its 28-byte RDMAP header (R, only together with D). The
 * struct covers the largest form (2 + 18 + 28 after the length).
 *
 * Copying an offending FPDU's header from its MPA length on, with that
 * length replaced, yields exactly ddp_seg_len + term_hdrs. xiw reports the
 * ULPDU_Length (whole DDP segment) there; siw reports the payload length
 * only, so receivers treat the field as informational.
 */
#define XIW_TERM_HDRCT_M	0x80	/* DDP Segment Length valid */
#define XIW_TERM_HDRCT_D	0x40	/* Terminated DDP header included */
#define XIW_TERM_HDRCT_R	0x20	/* Terminated RDMA header included */

struct xiw_rdmap_term {
	struct xiw_ddp_untagged hdr;
	__be32 term_ctrl;	/* layer:4 etype:4 ecode:8 M D R rsvd:13 */
	__be16 ddp_seg_len;
	u8 term_hdrs[XIW_DDP_UNTAGGED_HDR_LEN + 28];
};

/* RFC 7306 section 5.2.1: Atomic Operation Request (QN 1). */
#define XIW_AOP_FETCH_ADD	0x0
#define XIW_AOP_RESERVED	0x1	/* "Swap" in the text, Reserved by IANA */
#define XIW_AOP_CMP_SWAP	0x2
#define XIW_AOP_MASK		0x0f	/* upper 28 bits: zero / ignored */
#define XIW_ATOMIC_ALIGN	8

struct xiw_rdmap_atomic_req {
	struct xiw_ddp_untagged hdr;
	__be32 aopcode;
	__be32 req_id;
	__be32 stag;
	__be64 to;
	__be64 add_swap;	/* Add Data or Swap Data */
	__be64 add_swap_mask;	/* FetchAdd: 0 = plain add; Swap: ~0 */
	__be64 cmp;		/* FetchAdd: 0 */
	__be64 cmp_mask;	/* FetchAdd: ~0 (ignored); CmpSwap: ~0 */
};

/* RFC 7306 section 5.2.2: Atomic Operation Response (QN 3). */
struct xiw_rdmap_atomic_resp {
	struct xiw_ddp_untagged hdr;
	__be32 req_id;
	__be64 orig;
};

/* RFC 7306 section 6.2: Immediate Data [with SE] (QN 0), exactly 8 bytes. */
struct xiw_rdmap_imm {
	struct xiw_ddp_untagged hdr;
	/* offset 20 */
	__be64 data __packed __aligned(4);
};

/*
 * Commit draft section 3.1.1: RDMA Flush Request (QN 1); the Response
 * (QN 3) is a bare untagged header. Disposition flags are a 32-bit field.
 */
#define XIW_FLUSH_PERSISTENT	0x1	/* P */
#define XIW_FLUSH_GLOBAL	0x2	/* G */
/*
 * xiw: R = the whole region of the Data Sink STag; TO and Length are
 * ignored. The draft leaves "selectivity" open (section 8); a requester
 * setting R sends Length 0xffffffff, so a peer that ignores R fails the
 * bounds check (a Terminate) instead of flushing less than asked.
 */
#define XIW_FLUSH_REGION	0x4
#define XIW_FLUSH_FLAGS		0x7

struct xiw_rdmap_flush_req {
	struct xiw_ddp_untagged hdr;
	__be32 sink_stag;
	__be32 sink_len;
	/* offset 28 */
	__be64 sink_to __packed __aligned(4);
	__be32 flags;
};

/*
 * Commit draft section 3.1.2: RDMA Verify Request (QN 1), followed by an
 * optional hash of algorithm-defined length; the Response (QN 3) carries
 * the hash after a bare untagged header.
 */
#define XIW_VERIFY_HASH_MAX	32	/* SHA-256; = XIW_VERIFY_MAX_HASH */

struct xiw_rdmap_verify_req {
	struct xiw_ddp_untagged hdr;
	__be32 sink_stag;
	__be32 sink_len;
	/* offset 28 */
	__be64 sink_to __packed __aligned(4);
	u8 hash[XIW_VERIFY_HASH_MAX];	/* 0 .. 32 bytes on the wire */
};

struct xiw_rdmap_verify_resp {
	struct xiw_ddp_untagged hdr;
	u8 hash[XIW_VERIFY_HASH_MAX];	/* 0 .. 32 bytes on the wire */
};

/*
 * Commit draft section 3.1.3: Atomic Write Request (QN 1, RDMAP control
 * 0xc0); the Response (QN 3, 0xc1) is a bare untagged header.
 */
#define XIW_ATOMIC_WRITE_LEN	8

struct xiw_rdmap_awrite_req {
	struct xiw_ddp_untagged hdr;
	__be32 sink_stag;
	__be32 sink_len;	/* must be 8 */
	/* offset 28 */
	__be64 sink_to __packed __aligned(4);
	__be64 data __packed __aligned(4);
};

/* Any FPDU header, for RX staging buffers. */
union xiw_fpdu_hdr {
	struct xiw_fpdu_ctrl ctrl;
	struct xiw_ddp_tagged tagged;
	struct xiw_ddp_untagged untagged;
	struct xiw_rdmap_rreq rreq;
	struct xiw_rdmap_term term;
	struct xiw_rdmap_atomic_req atomic_req;
	struct xiw_rdmap_atomic_resp atomic_resp;
	struct xiw_rdmap_imm imm;
	struct xiw_rdmap_flush_req flush_req;
	struct xiw_rdmap_verify_req verify_req;
	struct xiw_rdmap_verify_resp verify_resp;
	struct xiw_rdmap_awrite_req awrite_req;
};

/* RDMAP header lengths after the DDP header. */
#define XIW_RDMAP_RREQ_LEN		28
#define XIW_RDMAP_TERM_MIN		4
#define XIW_RDMAP_TERM_MAX		(4 + 2 + XIW_DDP_UNTAGGED_HDR_LEN + 28)
#define XIW_RDMAP_IMM_LEN		8
#define XIW_RDMAP_ATOMIC_REQ_LEN	52
#define XIW_RDMAP_ATOMIC_RESP_LEN	12
#define XIW_RDMAP_FLUSH_REQ_LEN		20
#define XIW_RDMAP_VERIFY_REQ_MIN	16
#define XIW_RDMAP_AWRITE_REQ_LEN	24

/* FPDU header length (from the MPA length) of an untagged message. */
#define XIW_UT_FPDU_HDR_LEN(rdmap_len)					\
	(XIW_MPA_HDR_LEN + XIW_DDP_UNTAGGED_HDR_LEN + (rdmap_len))

static_assert(sizeof(struct xiw_mpa_rr) == 20);
static_assert(offsetof(struct xiw_mpa_rr, flags) == 16);
static_assert(offsetof(struct xiw_mpa_rr, pd_len) == 18);
static_assert(sizeof(struct xiw_mpa_v2) == 4);
static_assert(sizeof(struct xiw_mpa_marker) == XIW_MPA_MARKER_LEN);
static_assert(sizeof(struct xiw_fpdu_ctrl) == 4);
static_assert(sizeof(struct xiw_ddp_tagged) ==
	      XIW_MPA_HDR_LEN + XIW_DDP_TAGGED_HDR_LEN);
static_assert(offsetof(struct xiw_ddp_tagged, to) == 8);
static_assert(sizeof(struct xiw_ddp_untagged) == XIW_UT_FPDU_HDR_LEN(0));
static_assert(offsetof(struct xiw_ddp_untagged, qn) == 8);
static_assert(offsetof(struct xiw_ddp_untagged, mo) == 16);
static_assert(sizeof(struct xiw_rdmap_rreq) ==
	      XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_RREQ_LEN));
static_assert(offsetof(struct xiw_rdmap_rreq, sink_to) == 24);
static_assert(offsetof(struct xiw_rdmap_rreq, src_to) == 40);
static_assert(sizeof(struct xiw_rdmap_term) ==
	      XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_TERM_MAX));
static_assert(offsetof(struct xiw_rdmap_term, ddp_seg_len) == 24);
static_assert(offsetof(struct xiw_rdmap_term, term_hdrs) == 26);
static_assert(sizeof(struct xiw_rdmap_atomic_req) ==
	      XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_ATOMIC_REQ_LEN));
static_assert(offsetof(struct xiw_rdmap_atomic_req, to) == 32);
static_assert(offsetof(struct xiw_rdmap_atomic_req, cmp_mask) == 64);
static_assert(sizeof(struct xiw_rdmap_atomic_resp) ==
	      XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_ATOMIC_RESP_LEN));
static_assert(offsetof(struct xiw_rdmap_atomic_resp, orig) == 24);
static_assert(sizeof(struct xiw_rdmap_imm) ==
	      XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_IMM_LEN));
static_assert(offsetof(struct xiw_rdmap_imm, data) == 20);
static_assert(sizeof(struct xiw_rdmap_flush_req) ==
	      XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_FLUSH_REQ_LEN));
static_assert(offsetof(struct xiw_rdmap_flush_req, sink_to) == 28);
static_assert(offsetof(struct xiw_rdmap_flush_req, flags) == 36);
static_assert(sizeof(struct xiw_rdmap_verify_req) ==
	      XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_VERIFY_REQ_MIN) +
	      XIW_VERIFY_HASH_MAX);
static_assert(offsetof(struct xiw_rdmap_verify_req, hash) ==
	      XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_VERIFY_REQ_MIN));
static_assert(offsetof(struct xiw_rdmap_verify_resp, hash) ==
	      XIW_UT_FPDU_HDR_LEN(0));
static_assert(sizeof(struct xiw_rdmap_awrite_req) ==
	      XIW_UT_FPDU_HDR_LEN(XIW_RDMAP_AWRITE_REQ_LEN));
static_assert(offsetof(struct xiw_rdmap_awrite_req, data) == 36);
static_assert(sizeof(union xiw_fpdu_hdr) == 72);

/* ------------------------------------------------------------------------
 * Terminate codes: RFC 5040 (sections 4 and 7), RFC 5041 section 7, RFC
 * 5044 section 8 and RFC 6581; the IANA "RDDP" registries (RFC 6580)
 * list them all.
 */
enum xiw_term_layer {
	XIW_TERM_LAYER_RDMAP = 0x0,
	XIW_TERM_LAYER_DDP = 0x1,
	XIW_TERM_LAYER_LLP = 0x2,	/* MPA */
};

enum xiw_rdmap_etype {
	XIW_RDMAP_ET_CATASTROPHIC = 0x0,	/* code 0x00 */
	XIW_RDMAP_ET_REMOTE_PROT = 0x1,
	XIW_RDMAP_ET_REMOTE_OP = 0x2,
};

enum xiw_rdmap_ecode {
	XIW_RDMAP_EC_INV_STAG = 0x00,		/* protection */
	XIW_RDMAP_EC_BASE_BOUNDS = 0x01,	/* protection */
	XIW_RDMAP_EC_ACCESS = 0x02,		/* protection */
	XIW_RDMAP_EC_STAG_NOT_ASSOC = 0x03,	/* protection */
	XIW_RDMAP_EC_TO_WRAP = 0x04,		/* protection */
	XIW_RDMAP_EC_VERSION = 0x05,		/* operation */
	XIW_RDMAP_EC_OPCODE = 0x06,		/* operation: unexpected */
	XIW_RDMAP_EC_CATASTROPHIC_STREAM = 0x07,	/* operation */
	XIW_RDMAP_EC_CATASTROPHIC_GLOBAL = 0x08,	/* operation */
	XIW_RDMAP_EC_CANNOT_INVALIDATE = 0x09,	/* protection or operation */
	XIW_RDMAP_EC_UNSPECIFIED = 0xff,	/* protection or operation */
};

enum xiw_ddp_etype {
	XIW_DDP_ET_CATASTROPHIC = 0x0,	/* code 0x00 */
	XIW_DDP_ET_TAGGED = 0x1,
	XIW_DDP_ET_UNTAGGED = 0x2,
	XIW_DDP_ET_LLP_RSVD = 0x3,	/* reserved for the LLP */
};

enum xiw_ddp_ecode {
	XIW_DDP_EC_T_INV_STAG = 0x00,
	XIW_DDP_EC_T_BASE_BOUNDS = 0x01,
	XIW_DDP_EC_T_STAG_NOT_ASSOC = 0x02,
	XIW_DDP_EC_T_TO_WRAP = 0x03,
	XIW_DDP_EC_T_VERSION = 0x04,
	XIW_DDP_EC_UT_INV_QN = 0x01,
	XIW_DDP_EC_UT_MSN_NO_BUF = 0x02,
	XIW_DDP_EC_UT_MSN_RANGE = 0x03,
	XIW_DDP_EC_UT_INV_MO = 0x04,
	XIW_DDP_EC_UT_TOO_LONG = 0x05,
	XIW_DDP_EC_UT_VERSION = 0x06,
};

enum xiw_mpa_etype {
	XIW_MPA_ET_MPA = 0x0,
};

enum xiw_mpa_ecode {
	XIW_MPA_EC_TCP_CLOSED = 0x01,	/* connection closed, terminated, lost */
	XIW_MPA_EC_CRC = 0x02,
	XIW_MPA_EC_MARKER_LEN = 0x03,	/* marker and ULPDU_Length mismatch */
	XIW_MPA_EC_BAD_RR = 0x04,	/* invalid MPA Request/Reply frame */
	XIW_MPA_EC_LOCAL_CATASTROPHIC = 0x05,	/* RFC 6581 */
	XIW_MPA_EC_INSUFFICIENT_IRD = 0x06,	/* RFC 6581 */
	XIW_MPA_EC_NO_MATCHING_RTR = 0x07,	/* RFC 6581 */
};

struct xiw_term_code {
	u8 layer;	/* enum xiw_term_layer */
	u8 etype;
	u8 ecode;
	u8 hdrct;	/* XIW_TERM_HDRCT_*: what the Terminate carries */
};

/*
 * What a Terminate says about the request it answers, in the classes of
 * IBA chapter 9 (the verbs statuses and events follow from it): a
 * protection error (RDMAP remote protection, DDP tagged buffer), a
 * request the peer could not take (RDMAP version or opcode, DDP untagged
 * buffer or version), a remote operation that failed (the rest of RDMAP
 * remote operation), or the stream's end (MPA/LLP, catastrophic).
 */
enum xiw_term_class {
	XIW_TERM_CLASS_ACCESS,
	XIW_TERM_CLASS_INVALID,
	XIW_TERM_CLASS_OPERATION,
	XIW_TERM_CLASS_FATAL,
};

static inline enum xiw_term_class
xiw_term_classify(const struct xiw_term_code *tc)
{
	switch (tc->layer) {
	case XIW_TERM_LAYER_RDMAP:
		if (tc->etype == XIW_RDMAP_ET_REMOTE_PROT)
			return XIW_TERM_CLASS_ACCESS;
		if (tc->etype != XIW_RDMAP_ET_REMOTE_OP)
			break;
		if (tc->ecode == XIW_RDMAP_EC_VERSION ||
		    tc->ecode == XIW_RDMAP_EC_OPCODE)
			return XIW_TERM_CLASS_INVALID;
		return XIW_TERM_CLASS_OPERATION;
	case XIW_TERM_LAYER_DDP:
		if (tc->etype == XIW_DDP_ET_TAGGED &&
		    tc->ecode != XIW_DDP_EC_T_VERSION)
			return XIW_TERM_CLASS_ACCESS;
		if (tc->etype == XIW_DDP_ET_TAGGED ||
		    tc->etype == XIW_DDP_ET_UNTAGGED)
			return XIW_TERM_CLASS_INVALID;
		break;
	}
	return XIW_TERM_CLASS_FATAL;
}

static inline __be32 xiw_term_ctrl(const struct xiw_term_code *tc)
{
	return cpu_to_be32((u32)(tc->layer & 0xf) << 28 |
			   (u32)(tc->etype & 0xf) << 24 |
			   (u32)tc->ecode << 16 |
			   (u32)(tc->hdrct & 0xe0) << 8);
}

static inline void xiw_term_parse(__be32 term_ctrl, struct xiw_term_code *tc)
{
	u32 v = be32_to_cpu(term_ctrl);

	tc->layer = v >> 28;
	tc->etype = (v >> 24) & 0xf;
	tc->ecode = (v >> 16) & 0xff;
	tc->hdrct = (v >> 8) & 0xe0;
}

/* Octets of the Terminate's RDMAP part (after the untagged DDP header). */
static inline u32 xiw_term_len(u8 hdrct, bool tagged_hdr)
{
	u32 len = XIW_RDMAP_TERM_MIN;

	if (hdrct & (XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D))
		len += 2;
	if (hdrct & XIW_TERM_HDRCT_D) {
		len += tagged_hdr ? XIW_DDP_TAGGED_HDR_LEN :
				    XIW_DDP_UNTAGGED_HDR_LEN;
		if (hdrct & XIW_TERM_HDRCT_R)
			len += XIW_RDMAP_RREQ_LEN;
	}
	return len;
}

static inline bool xiw_term_set(struct xiw_term_code *tc, u8 layer,
				u8 etype, u8 ecode, u8 hdrct)
{
	tc->layer = layer;
	tc->etype = etype;
	tc->ecode = ecode;
	tc->hdrct = hdrct;
	return false;
}

/* ------------------------------------------------------------------------
 * Receive-side header check
 *
 * Per-opcode rules as a table (one line per opcode): tagged or not, QN,
 * RDMAP header length bounds after the DDP header, and whether the message
 * must be a single DDP segment (L = 1, MO = 0). Encoded in a u32 so the
 * table lives in code, not in a per-TU static array.
 */
#define XIW_OPD_VALID		0x1U
#define XIW_OPD_T		0x2U
#define XIW_OPD_ONE		0x4U
#define XIW_OPD_ANY		0xffU	/* no upper bound */
#define XIW_OPD(t, qn, min, max, one)					\
	(XIW_OPD_VALID | ((t) ? XIW_OPD_T : 0) | ((one) ? XIW_OPD_ONE : 0) | \
	 (u32)(qn) << 4 | (u32)(min) << 8 | (u32)(max) << 16)
#define XIW_OPD_QN(d)		(((d) >> 4) & 0xf)
#define XIW_OPD_MIN(d)		(((d) >> 8) & 0xff)
#define XIW_OPD_MAX(d)		(((d) >> 16) & 0xff)

static inline u32 xiw_rdmap_op_desc(unsigned int op)
{
	switch (op) {
	/*                                   T  QN  RDMAP min, max  single */
	case XIW_RDMAP_OP_WRITE:	return XIW_OPD(1, 0, 0, XIW_OPD_ANY, 0);
	case XIW_RDMAP_OP_READ_REQ:	return XIW_OPD(0, 1, 28, 28, 1);
	case XIW_RDMAP_OP_READ_RESP:	return XIW_OPD(1, 0, 0, XIW_OPD_ANY, 0);
	case XIW_RDMAP_OP_SEND:		return XIW_OPD(0, 0, 0, XIW_OPD_ANY, 0);
	case XIW_RDMAP_OP_SEND_INV:	return XIW_OPD(0, 0, 0, XIW_OPD_ANY, 0);
	case XIW_RDMAP_OP_SEND_SE:	return XIW_OPD(0, 0, 0, XIW_OPD_ANY, 0);
	case XIW_RDMAP_OP_SEND_SE_INV:	return XIW_OPD(0, 0, 0, XIW_OPD_ANY, 0);
	case XIW_RDMAP_OP_TERMINATE:	return XIW_OPD(0, 2, 4, 52, 1);
	case XIW_RDMAP_OP_IMM:		return XIW_OPD(0, 0, 8, 8, 1);
	case XIW_RDMAP_OP_IMM_SE:	return XIW_OPD(0, 0, 8, 8, 1);
	case XIW_RDMAP_OP_ATOMIC_REQ:	return XIW_OPD(0, 1, 52, 52, 1);
	case XIW_RDMAP_OP_ATOMIC_RESP:	return XIW_OPD(0, 3, 12, 12, 1);
	case XIW_RDMAP_OP_FLUSH_REQ:	return XIW_OPD(0, 1, 20, 20, 1);
	case XIW_RDMAP_OP_FLUSH_RESP:	return XIW_OPD(0, 3, 0, 0, 1);
	case XIW_RDMAP_OP_VERIFY_REQ:	return XIW_OPD(0, 1, 16, 48, 1);
	case XIW_RDMAP_OP_VERIFY_RESP:	return XIW_OPD(0, 3, 0, 32, 1);
	case XIW_RDMAP_OP_ATOMIC_WRITE_REQ:  return XIW_OPD(0, 1, 24, 24, 1);
	case XIW_RDMAP_OP_ATOMIC_WRITE_RESP: return XIW_OPD(0, 3, 0, 0, 1);
	default:			return 0;
	}
}

/* Header octets from the MPA length on that RX must stage for @op. */
static inline u32 xiw_rx_hdr_len(unsigned int op)
{
	u32 d = xiw_rdmap_op_desc(op);

	if (!d)
		return 0;
	return XIW_MPA_HDR_LEN + ((d & XIW_OPD_T) ? XIW_DDP_TAGGED_HDR_LEN :
						     XIW_DDP_UNTAGGED_HDR_LEN) +
	       XIW_OPD_MIN(d);
}

/*
 * Bytes from the MPA length on that xiw_rx_check_hdr() reads: any valid
 * FPDU is at least this long (2 + 14 + 4 CRC), so RX can always wait for
 * them before judging a header.
 */
#define XIW_RX_PEEK_LEN		20

/**
 * xiw_rx_check_hdr - validate the DDP/RDMAP header of an incoming FPDU
 * @fpdu: FPDU from its MPA length field, XIW_RX_PEEK_LEN readable bytes
 * @op_mask: XIW_OPMASK_* bits of the opcodes this receiver accepts
 * @opcode: set to the logical opcode if the header is valid
 * @tc: set to the Terminate to send if it is not
 *
 * Checks in protocol-layer order: segment shorter than its DDP header
 * (LLP), DDP version, untagged QN range, RDMAP version, opcode known and
 * enabled, T flag vs opcode, QN vs opcode, RDMAP header length, and for
 * single-segment messages MO, L and maximum length. MSN, STags, bounds and
 * rights need QP state and are left to the caller; reserved bits (DDP
 * Rsvd, RDMAP Rsv, Invalidate STag of non-invalidating messages) are
 * ignored.
 *
 * Return: true if valid.
 */
static inline bool xiw_rx_check_hdr(const void *fpdu, u32 op_mask,
				    unsigned int *opcode,
				    struct xiw_term_code *tc)
{
	const struct xiw_ddp_untagged *h =
		(const struct xiw_ddp_untagged *)fpdu;
	const u8 md = XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D;
	u32 ulpdu = be16_to_cpu(h->ctrl.mpa_len);
	bool tagged = h->ctrl.ddp & XIW_DDP_T;
	u32 ddp_len = xiw_ddp_hdr_len(h->ctrl.ddp);
	u32 d, rlen;
	u8 hdrct;
	int op;

	if (ulpdu < ddp_len)
		return xiw_term_set(tc, XIW_TERM_LAYER_LLP, XIW_MPA_ET_MPA,
				    XIW_MPA_EC_MARKER_LEN, 0);
	if ((h->ctrl.ddp & XIW_DDP_DV_MASK) != XIW_DDP_VERSION)
		return xiw_term_set(tc, XIW_TERM_LAYER_DDP,
				    tagged ? XIW_DDP_ET_TAGGED :
					     XIW_DDP_ET_UNTAGGED,
				    tagged ? XIW_DDP_EC_T_VERSION :
					     XIW_DDP_EC_UT_VERSION, 0);
	if (!tagged && be32_to_cpu(h->qn) >= XIW_QN_COUNT)
		return xiw_term_set(tc, XIW_TERM_LAYER_DDP, XIW_DDP_ET_UNTAGGED,
				    XIW_DDP_EC_UT_INV_QN, md);
	op = xiw_rdmap_opcode(h->ctrl.rdmap);
	if (op < 0)
		return xiw_term_set(tc, XIW_TERM_LAYER_RDMAP,
				    XIW_RDMAP_ET_REMOTE_OP,
				    XIW_RDMAP_EC_VERSION, md);
	d = xiw_rdmap_op_desc(op);
	if (!d || !(op_mask & (1U << op)) || tagged != !!(d & XIW_OPD_T))
		return xiw_term_set(tc, XIW_TERM_LAYER_RDMAP,
				    XIW_RDMAP_ET_REMOTE_OP,
				    XIW_RDMAP_EC_OPCODE, md);
	if (!tagged && be32_to_cpu(h->qn) != XIW_OPD_QN(d))
		return xiw_term_set(tc, XIW_TERM_LAYER_DDP, XIW_DDP_ET_UNTAGGED,
				    XIW_DDP_EC_UT_INV_QN, md);
	rlen = ulpdu - ddp_len;
	if (rlen < XIW_OPD_MIN(d))
		return xiw_term_set(tc, XIW_TERM_LAYER_LLP, XIW_MPA_ET_MPA,
				    XIW_MPA_EC_MARKER_LEN, md);
	hdrct = md;
	if (op == XIW_RDMAP_OP_READ_REQ)
		hdrct |= XIW_TERM_HDRCT_R;
	if (d & XIW_OPD_ONE) {
		if (h->mo)
			return xiw_term_set(tc, XIW_TERM_LAYER_DDP,
					    XIW_DDP_ET_UNTAGGED,
					    XIW_DDP_EC_UT_INV_MO, hdrct);
		if (!(h->ctrl.ddp & XIW_DDP_L) ||
		    (XIW_OPD_MAX(d) != XIW_OPD_ANY && rlen > XIW_OPD_MAX(d)))
			return xiw_term_set(tc, XIW_TERM_LAYER_DDP,
					    XIW_DDP_ET_UNTAGGED,
					    XIW_DDP_EC_UT_TOO_LONG, hdrct);
	}
	*opcode = op;
	return true;
}

/*
 * The steps of RX's header staging (xiw_rx_hdr_next()): more header to
 * stage, the whole header staged, or the header refused.
 */
enum xiw_rx_hdr_step {
	XIW_RX_HDR_MORE,
	XIW_RX_HDR_DONE,
	XIW_RX_HDR_BAD,
};

/**
 * xiw_rx_hdr_next - what RX stages next of an FPDU's header
 * @fpdu: the header staged so far, from its MPA length (@got octets)
 * @got: octets staged; RX calls this each time it has the octets the last
 *	call asked for, starting with the 4-octet FPDU control field
 * @op_mask: XIW_OPMASK_* bits of the opcodes this receiver accepts
 * @opcode: set to the logical opcode once the DDP header is judged valid
 * @need: set to the octets to have staged in all (> @got) for MORE
 * @tc: set to the Terminate to send for BAD
 *
 * After the control field: a segment shorter than its DDP header is
 * refused at once (the octets still missing for that header belong to
 * the next FPDU and may never come), else the DDP header comes next.
 * After the DDP header: xiw_rx_check_hdr(), then the RDMAP header of the
 * opcode (xiw_rx_hdr_len()); a Terminate (its optional headers) and a
 * Verify Request or Response (the hash) stage the whole segment, which
 * xiw_rx_check_hdr() bounded. Reads only the @got octets staged.
 *
 * Return: XIW_RX_HDR_MORE, XIW_RX_HDR_DONE or XIW_RX_HDR_BAD.
 */
static inline enum xiw_rx_hdr_step
xiw_rx_hdr_next(const void *fpdu, u32 got, u32 op_mask, unsigned int *opcode,
		u32 *need, struct xiw_term_code *tc)
{
	const struct xiw_fpdu_ctrl *c = (const struct xiw_fpdu_ctrl *)fpdu;
	u32 ulpdu = be16_to_cpu(c->mpa_len);
	u32 ddp_len = xiw_ddp_hdr_len(c->ddp);
	u32 n;

	if (got == sizeof(struct xiw_fpdu_ctrl)) {
		if (ulpdu < ddp_len) {
			xiw_term_set(tc, XIW_TERM_LAYER_LLP, XIW_MPA_ET_MPA,
				     XIW_MPA_EC_MARKER_LEN, 0);
			return XIW_RX_HDR_BAD;
		}
		*need = XIW_MPA_HDR_LEN + ddp_len;
		return XIW_RX_HDR_MORE;
	}
	if (got == XIW_MPA_HDR_LEN + ddp_len) {
		if (!xiw_rx_check_hdr(fpdu, op_mask, opcode, tc))
			return XIW_RX_HDR_BAD;
		n = xiw_rx_hdr_len(*opcode);
		if (*opcode == XIW_RDMAP_OP_TERMINATE ||
		    *opcode == XIW_RDMAP_OP_VERIFY_REQ ||
		    *opcode == XIW_RDMAP_OP_VERIFY_RESP)
			n = XIW_MPA_HDR_LEN + ulpdu;
		if (n > got) {
			*need = n;
			return XIW_RX_HDR_MORE;
		}
	}
	return XIW_RX_HDR_DONE;
}

/* ------------------------------------------------------------------------
 * Atomics (RFC 7306 section 5.1), pure: the responder calls these inside
 * its cmpxchg loop on the target word (in the target's native byte order).
 */

/*
 * Masked FetchAdd: a set bit in @mask marks the most significant bit of a
 * field; the carry out of that bit is discarded, so fields add
 * independently. @mask = 0 is a plain 64-bit add; @mask = ~0 makes every
 * bit its own field (orig ^ add). Adding with the field MSBs cleared keeps
 * every carry inside its field; the MSBs are then the sum bit without
 * carry-out: orig ^ add ^ carry-in.
 */
static inline u64 xiw_masked_fadd(u64 orig, u64 add, u64 mask)
{
	return ((orig & ~mask) + (add & ~mask)) ^ ((orig ^ add) & mask);
}

/* Masked CmpSwap: the value to store (equal to @orig if no match). */
static inline u64 xiw_masked_cswap(u64 orig, u64 cmp, u64 cmp_mask,
				   u64 swap, u64 swap_mask)
{
	if ((cmp ^ orig) & cmp_mask)
		return orig;
	return (orig & ~swap_mask) | (swap & swap_mask);
}

/*
 * Atomic Request checks needing only the header (@target_addr: the
 * resolved ULP buffer address): unsupported AOpCode -> Unexpected OpCode
 * (RFC 7306 section 5.2.1 rule 4 names no code; section 1 says "Remote
 * Operation Error or Unexpected OpCode"), misaligned target -> Remote
 * Operation / Catastrophic error localized to RDMAP Stream (section 8.2).
 * xiw applies the latter to Atomic Write too (the draft names no code).
 */
static inline bool xiw_atomic_req_check(u32 aopcode, u64 target_addr,
					struct xiw_term_code *tc)
{
	u32 aop = aopcode & XIW_AOP_MASK;

	if (aop != XIW_AOP_FETCH_ADD && aop != XIW_AOP_CMP_SWAP)
		return xiw_term_set(tc, XIW_TERM_LAYER_RDMAP,
				    XIW_RDMAP_ET_REMOTE_OP,
				    XIW_RDMAP_EC_OPCODE,
				    XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D);
	if (target_addr & (XIW_ATOMIC_ALIGN - 1))
		return xiw_term_set(tc, XIW_TERM_LAYER_RDMAP,
				    XIW_RDMAP_ET_REMOTE_OP,
				    XIW_RDMAP_EC_CATASTROPHIC_STREAM,
				    XIW_TERM_HDRCT_M | XIW_TERM_HDRCT_D);
	return true;
}

#endif /* XIW_WIRE_H */
