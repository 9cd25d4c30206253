// SPDX-License-Identifier: GPL-2.0
/*
 * xiw - who runs TX, and where. The TX engine (xiw_tx.c) runs in exactly
 * one context at a time: whoever wins XIW_DP_TX_BUSY. A kick that finds
 * the bit taken sets XIW_DP_TX_MORE, and the owner looks again after
 * releasing it, so no kick is lost.
 *
 * The runners: a user doorbell that may sleep (preemptible) runs TX
 * inline, so a Send goes to TCP in the poster's own syscall when the
 * socket has room; RX answers short inbound requests at the end of its
 * pass (xiw_sched_from_rx(), responses only); otherwise (softirq,
 * spinlock held, a long Read Response) the TX work item runs it. A kernel
 * consumer's posts and a user poster in a burst (XIW_DOORBELL_SQ_BATCH)
 * hand TX to the work item on another CPU and go on (xiw_sched_defer()),
 * so WRs leave in batches; a kernel post that may not sleep sends its
 * short WRs itself when it is alone or there is no other CPU
 * (xiw_sched_from_post()). The work item goes to a nice -20 or a nice 0
 * workqueue by the QP's and the CPU's load (xiw_sched_wq()).
 *
 * Also here: the user SQ's doorbell suppression (XIW_SQ_KERNEL_ACTIVE,
 * set while a runner will look at the SQ without a doorbell) and the
 * retry after a TCP memory backoff.
 */
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/sched/clock.h>
#include <linux/sched/mm.h>
#include <net/sock.h>

#include "xiw_sched.h"
#include "xiw_tx.h"

/*
 * The data path's workqueues: TX work (xiw_sched_wq() picks one) and,
 * on the high-priority one, the data path's error and Terminate work.
 * WQ_MEM_RECLAIM: block storage (NVMe-oF, NFS) runs over xiw, so
 * writeback under memory pressure depends on this work making progress.
 */
struct workqueue_struct *xiw_sched_hi_wq;
static struct workqueue_struct *xiw_sched_bulk_wq;

int xiw_sched_init(void)
{
	xiw_sched_hi_wq = alloc_workqueue("xiw_dp", WQ_HIGHPRI | WQ_MEM_RECLAIM,
					  0);
	if (!xiw_sched_hi_wq)
		return -ENOMEM;
	/* TX of a QP with more to send than one run: nice 0 (xiw_sched_wq()) */
	xiw_sched_bulk_wq = alloc_workqueue("xiw_dp_bulk", WQ_MEM_RECLAIM, 0);
	if (!xiw_sched_bulk_wq) {
		destroy_workqueue(xiw_sched_hi_wq);
		return -ENOMEM;
	}
	return 0;
}

void xiw_sched_exit(void)
{
	destroy_workqueue(xiw_sched_bulk_wq);
	destroy_workqueue(xiw_sched_hi_wq);
}

/* The backoff is over: TX tries again, unless sk_write_space was first. */
void xiw_sched_retry_work(struct work_struct *w)
{
	struct xiw_qp_dp *dp = container_of(to_delayed_work(w),
					    struct xiw_qp_dp, tx_retry);

	if (test_and_clear_bit(XIW_DP_TX_NOSPACE, &dp->flags))
		xiw_sched_queue(dp);
}

/*
 * Runner takes the SQ: set XIW_SQ_KERNEL_ACTIVE unless the queue is in
 * error (xiw_qp_enter_error() clears the flag in the same word, so the
 * two updates are ordered and an erroring QP never keeps the flag: its
 * posters must ring to get their WQEs flushed). Giving up after lost
 * races only costs doorbells.
 */
static void xiw_sched_sq_active(struct xiw_qp *qp)
{
	u32 *word = &qp->sq.ctrl->flags;
	int tries = 8;
	u32 old;

	do {
		old = READ_ONCE(*word);
		if (old & (XIW_QUEUE_ERROR | XIW_SQ_KERNEL_ACTIVE))
			return;
	} while (cmpxchg(word, old, old | XIW_SQ_KERNEL_ACTIVE) != old &&
		 --tries);
}

/*
 * Doorbell suppression for user SQs (XIW_SQ_KERNEL_ACTIVE, see xiw-abi.h).
 * The flag is set while a TX runner owns the SQ and will look at it again
 * without a doorbell: while it runs, while its work is requeued after a
 * burst, and while it waits for an event that requeues it (socket space,
 * the end of a memory backoff, a Read Response for ORD or a fence).
 * Otherwise it is cleared on the way out, and then the head slot is
 * checked once more: the poster publishes
 * its WQE, issues a full barrier and loads the flag; we clear the flag,
 * issue a full barrier and load the slot's flags, so at least one of the
 * two sees the other's store and no WQE is left without a runner. The
 * recheck loops only if TX's last fetch found the ring empty (a WQE TX
 * left because it is blocked is no race: its wakeup requeues TX). In
 * error the flag is just cleared: xiw_qp_enter_error() flushes what is in
 * the ring.
 * Returns true if TX must run again.
 */
static bool xiw_sched_sq_idle(struct xiw_qp_dp *dp, int rv)
{
	struct xiw_qp *qp = dp->qp;
	bool head_seen;

	if (rv > 0)
		return false;		/* requeued: stays active */
	if (!test_bit(XIW_DP_ERROR, &dp->flags) &&
	    !test_bit(XIW_DP_STOPPED, &dp->flags) &&
	    (test_bit(XIW_DP_TX_NOSPACE, &dp->flags) || dp->tx.sq_active))
		return false;		/* an event requeues TX */
	/*
	 * A WQE posted after TX's last fetch found the ring empty is in the
	 * race window even if it is visible already: look again for it.
	 */
	head_seen = !dp->tx.sq_empty_seen;
	xiw_ctrl_update(&qp->sq.ctrl->flags, 0, XIW_SQ_KERNEL_ACTIVE);
	/* Pairs with the poster's barrier between VALID and the flag load. */
	smp_mb();
	return !head_seen && !test_bit(XIW_DP_ERROR, &dp->flags) &&
	       xiw_tx_sq_head_valid(qp);
}

/*
 * The workqueue of the TX work. xiw_sched_hi_wq's workers run at nice -20, so
 * that a poster's burst or a peer's requests are answered at once, ahead
 * of whatever else the CPU runs. TX work that keeps a CPU busy would take
 * it from every normal task there for as long as it lasts (CFS gives a
 * nice 0 task a small fraction of a CPU beside a nice -20 one that never
 * sleeps), so it goes to
 * xiw_sched_bulk_wq (nice 0, a fair share) instead, in two cases:
 *
 * - the QP is a bulk flow: its last run had more to send than a run
 *   takes (its budget of XIW_TX_BURST FPDUs spent, or TCP full or short
 *   of memory), until a run ends with nothing left that it could send;
 * - the CPU is loaded: TX work ran on it for more than half of the last
 *   window of XIW_SCHED_LOAD_WINDOW_NS (xiw_sched_cpu_account()), whichever QPs
 *   it was for - many QPs whose runs each drain their work can keep a CPU
 *   just as busy as one bulk flow.
 *
 * A latency-bound QP on a CPU with time to spare never leaves
 * xiw_sched_hi_wq.
 * tx.bulk is written by the owner of TX_BUSY, a CPU's load by the TX work
 * on that CPU; both are read without a lock: a stale value picks the
 * other queue once, and a work item queued on either runs TX all the
 * same (TX_BUSY serialises the runners).
 */
#define XIW_SCHED_LOAD_WINDOW_NS	(10 * NSEC_PER_MSEC)

struct xiw_sched_cpu_load {
	u64 win_start;		/* local_clock() at the window's start */
	u64 busy;		/* ns of TX work in the window so far */
	bool loaded;		/* the last window was more than half busy */
};

static DEFINE_PER_CPU(struct xiw_sched_cpu_load, xiw_sched_load);

/* A run of the TX work on this CPU took from @t0 to now. */
static void xiw_sched_cpu_account(u64 t0)
{
	struct xiw_sched_cpu_load *l = get_cpu_ptr(&xiw_sched_load);
	u64 now = local_clock(), span;

	l->busy += now - t0;
	span = now - l->win_start;
	if (span >= XIW_SCHED_LOAD_WINDOW_NS) {
		WRITE_ONCE(l->loaded, l->busy * 2 > span);
		l->win_start = now;
		l->busy = 0;
	}
	put_cpu_ptr(&xiw_sched_load);
}

static struct workqueue_struct *xiw_sched_wq(struct xiw_qp_dp *dp,
					     unsigned int cpu)
{
	return READ_ONCE(dp->tx.bulk) ||
	       READ_ONCE(per_cpu_ptr(&xiw_sched_load, cpu)->loaded) ?
	       xiw_sched_bulk_wq : xiw_sched_hi_wq;
}

/* After a run of the TX loop that returned @rv: bulk flow or not. */
static void xiw_sched_note_load(struct xiw_qp_dp *dp, int rv)
{
	bool bulk = rv > 0 || test_bit(XIW_DP_TX_NOSPACE, &dp->flags);

	if (bulk != dp->tx.bulk)
		WRITE_ONCE(dp->tx.bulk, bulk);
}

/*
 * One pass of the TX loop from a runner that may sleep. A kernel QP's TX
 * is part of its consumer's I/O path: a storage ULP's writeback, swap-out
 * or reclaim may be waiting for the very WRs this pass sends. Reclaim
 * entered from an allocation here (the QP's TX pages, the skbs and page
 * fragments sendmsg allocates with the socket's GFP_KERNEL) must then not
 * start I/O and wait for it, which may queue behind those WRs: the pass
 * runs with NOIO semantics (memalloc_noio_save()), which every allocation
 * in it, TCP's included, honours. User QPs allocate with GFP_KERNEL,
 * charged to their creator's memory cgroup (xiw_qp_gfp()): the process
 * is not in the kernel's I/O path.
 */
static int xiw_sched_tx_pass(struct xiw_qp_dp *dp)
{
	unsigned int noio;
	int rv;

	if (dp->qp->user)
		return xiw_tx_loop(dp);
	noio = memalloc_noio_save();
	rv = xiw_tx_loop(dp);
	memalloc_noio_restore(noio);
	return rv;
}

/*
 * Passes of the TX loop one run makes while kicks keep coming (TX_MORE
 * set again during each pass that left nothing it could send) before it
 * hands on to the TX work. Each pass is bounded (XIW_TX_BURST FPDUs), but
 * a steady poster or a peer pacing its requests just below what a pass
 * drains would keep one run going for as long as they last: a doorbell's
 * syscall would not return, and the TX work would hold its CPU without
 * its load ever being accounted (xiw_sched_cpu_account() runs when a work
 * item ends), so it would never move to the nice 0 queue. A requeued work
 * goes to the queue its CPU's load calls for.
 */
#define XIW_SCHED_RUN_PASSES	8

/*
 * A resume of TX can hold a split FPDU, so an RTR or Terminate arriving
 * mid-FPDU waits until the FPDU is out: they are framed only when
 * !fpdu_active (xiw_tx_next).
 *
 * Runs in process context where it may sleep: the TX work, or a kick
 * whose caller may (xiw_sched_kick()); RX runs TX through
 * xiw_sched_from_rx() instead, which never comes here. Between two passes
 * it owns nothing (TX_BUSY released), so it offers the CPU there
 * (cond_resched()): on a kernel without preemption a nice -20 worker
 * would otherwise keep it from every other task for a whole run.
 */
static void xiw_sched_run(struct xiw_qp_dp *dp)
{
	bool user = dp->qp->user && dp->qp->sq.ctrl;
	int passes = XIW_SCHED_RUN_PASSES;
	int rv;

	for (;;) {
		if (test_and_set_bit_lock(XIW_DP_TX_BUSY, &dp->flags))
			return;
		clear_bit(XIW_DP_TX_MORE, &dp->flags);
		if (user)
			xiw_sched_sq_active(dp->qp);
		dp->tx.sq_empty_seen = false;
		rv = xiw_sched_tx_pass(dp);
		/* the flush took zero-copy pages back: let go of the WR's */
		xiw_tx_zc_abandon(dp);
		xiw_sched_note_load(dp, rv);
		if (user && xiw_sched_sq_idle(dp, rv))
			set_bit(XIW_DP_TX_MORE, &dp->flags);
		clear_bit_unlock(XIW_DP_TX_BUSY, &dp->flags);
		/* Pairs with the set_bit(TX_MORE) in xiw_sched_request(). */
		smp_mb__after_atomic();
		if (rv > 0) {
			xiw_sched_queue(dp);
			return;
		}
		if (!test_bit(XIW_DP_TX_MORE, &dp->flags))
			return;
		if (!--passes) {
			/* TX_MORE stays set: the TX work looks again */
			xiw_sched_queue(dp);
			return;
		}
		cond_resched();
	}
}

void xiw_sched_work(struct work_struct *w)
{
	struct xiw_qp_dp *dp = container_of(w, struct xiw_qp_dp, tx_work);
	u64 t0 = local_clock();
	int posts = atomic_xchg(&dp->defer_posts, 0);
	bool piled = posts > 1;

	/* xiw_sched_defer(): did kernel posts pile up before this ran? */
	if (posts && piled != READ_ONCE(dp->defer_batch))
		WRITE_ONCE(dp->defer_batch, piled);

	/*
	 * Like a kick: if RX holds TX_BUSY to send responses only
	 * (xiw_sched_from_rx), it sees TX_MORE and queues the work again.
	 */
	set_bit(XIW_DP_TX_MORE, &dp->flags);
	/* TX_MORE before TX_BUSY; pairs with xiw_sched_from_rx() */
	smp_mb__after_atomic();
	xiw_sched_run(dp);
	xiw_sched_cpu_account(t0);
}

/* Queue the TX work item (counted: the per-op cost of a hop). */
void xiw_sched_queue(struct xiw_qp_dp *dp)
{
	/* a bound workqueue: the work runs on this CPU */
	if (queue_work(xiw_sched_wq(dp, raw_smp_processor_id()), &dp->tx_work))
		xiw_dp_stat_add(dp, XIW_STAT_TX_WORK_QUEUED, 1);
}

/*
 * May RX send responses now? Caller owns TX_BUSY. TX must be idle at a
 * message boundary: no FPDU half in TCP, no SQ message between two of its
 * FPDUs, no response started (a Read Response in progress is finished by
 * whoever owns TX, a heavy request is with the exec work), and nothing
 * that only the TX work sends or waits for (Terminate, RTR, socket space).
 */
static bool xiw_sched_rx_may_send(struct xiw_qp_dp *dp)
{
	struct xiw_tx_ctx *tx = &dp->tx;

	return !(READ_ONCE(dp->flags) &
		 (BIT(XIW_DP_ERROR) | BIT(XIW_DP_TERM_PENDING) |
		  BIT(XIW_DP_STOPPED) | BIT(XIW_DP_TX_NOSPACE) |
		  BIT(XIW_DP_RTR_WAIT) | BIT(XIW_DP_EXEC_BUSY) |
		  BIT(XIW_DP_EXEC_DONE))) &&
	       dp->rtr == XIW_RTR_NONE && !tx->fpdu_active && !tx->rr_active &&
	       !tx->batch_len && !(tx->sq_active && tx->done);
}

/*
 * One pass of the TX loop by @run, a runner that holds the socket's
 * spinlock and not its lock (RX, an atomic post), as the owner of
 * TX_BUSY: TCP allocates with GFP_ATOMIC for the duration (its
 * memalloc reserve right kept), xiw_tx_locked() tells the engine.
 */
static int xiw_sched_locked_pass(struct xiw_qp_dp *dp,
				 enum xiw_tx_runner run)
{
	struct sock *sk = dp->sk;
	gfp_t gfp = sk->sk_allocation;
	int rv;

	sk->sk_allocation = GFP_ATOMIC | (gfp & __GFP_MEMALLOC);
	dp->tx.run = run;
	rv = xiw_tx_loop(dp);
	dp->tx.run = XIW_TX_RUN_WORK;
	sk->sk_allocation = gfp;
	return rv;
}

/*
 * RX queued inbound QN 1 requests in one pass of sk_data_ready: answer
 * the short ones right here instead of waking the TX work (which would
 * preempt whoever runs on this CPU - on one host, the poster that is
 * waiting for exactly this response - and cost two context switches per
 * request). Everything else kicks TX (xiw_sched_kick()).
 *
 * One sender: RX sends only as the owner of XIW_DP_TX_BUSY, taken with
 * the same test_and_set as every TX runner, so its FPDUs never interleave
 * with anyone's. If another runner owns TX, RX kicks it like anyone else
 * (TX_MORE: the owner looks again after releasing the bit). TX state is
 * touched only while owning the bit. A kick that finds RX owning TX sets
 * TX_MORE, and RX, which never clears it, queues the TX work when done.
 *
 * Why sending is legal here (Linux 6.12): RX runs with the socket locked,
 * either in softirq holding the socket spinlock with no owner, or in the
 * owner's own context draining the backlog (release_sock(),
 * xiw_llp_start()), and always with BHs off (sk_callback_lock). That is
 * the lock tcp_sendmsg_locked() wants. It must not sleep, and does not:
 * MSG_DONTWAIT gives it a zero timeout (it returns -EAGAIN instead of
 * waiting for memory or a connection), sk_allocation is GFP_ATOMIC for
 * the duration, its page fragment is the socket's own (sk_use_task_frag
 * is off for xiw sockets, xiw_llp_start(): in softirq "current" is
 * whoever was interrupted), and each call carries at most one FPDU of at
 * most XIW_TX_RX_READ_MAX payload bytes or one batch of copied FPDUs (at
 * most XIW_TX_BATCH_BYTES: every short response of the pass in one
 * call; 12 skbs of an MSS of 1448 even without GSO), below the 16 new
 * skbs after which tcp_sendmsg_locked() flushes the backlog (which would
 * take the spinlock we hold, or re-enter RX). No MSG_ZEROCOPY: responses
 * are copied. Bounded work: XIW_TX_RX_BURST FPDUs, then the TX work goes
 * on.
 * -EAGAIN parks TX in the FPDU as usual (TX_NOSPACE), and sk_write_space
 * queues the TX work, which resumes it.
 */
static void xiw_sched_from_rx(struct xiw_qp_dp *dp)
{
	int rv;

	if (test_and_set_bit_lock(XIW_DP_TX_BUSY, &dp->flags)) {
		/* the owner sees TX_MORE and answers */
		xiw_sched_kick(dp, false);
		return;
	}
	if (!xiw_sched_rx_may_send(dp)) {
		clear_bit_unlock(XIW_DP_TX_BUSY, &dp->flags);
		xiw_sched_queue(dp);
		return;
	}
	/*
	 * TX_MORE stays as it is: RX does only part of TX's work, so a kick
	 * that lost the race for TX_BUSY to us must still get a full runner
	 * (below), unlike in xiw_sched_run(), which clears it.
	 */
	rv = xiw_sched_locked_pass(dp, XIW_TX_RUN_RX);
	dp->tx.more = false;
	clear_bit_unlock(XIW_DP_TX_BUSY, &dp->flags);
	/* Pairs with the set_bit(TX_MORE) of a kick that saw TX_BUSY. */
	smp_mb__after_atomic();
	/*
	 * The TX work takes over whatever RX left: a kick that came in
	 * meanwhile (SQ work, a Terminate), the budget ran out, or requests
	 * RX does not answer (long Reads, Flush, Verify). A full socket
	 * waits for sk_write_space instead.
	 */
	if (rv > 0 || test_bit(XIW_DP_TX_MORE, &dp->flags) ||
	    (xiw_dp_irq_pending(dp) &&
	     !test_bit(XIW_DP_TX_NOSPACE, &dp->flags)))
		xiw_sched_queue(dp);
}

/*
 * An RX pass that brought at least this many requests, all short, has
 * them answered by the TX work on the next CPU (xiw_sched_answer()).
 */
static unsigned int resp_handoff_min = 8;
module_param(resp_handoff_min, uint, 0644);
MODULE_PARM_DESC(resp_handoff_min,
		 "hand the responses of an RX pass that brought at least this many short requests to the TX work on the next CPU (0: RX always answers itself; default 8)");

/*
 * Ask for a TX pass: set TX_MORE, then look at TX_BUSY. True if a runner
 * owns TX: it sees TX_MORE once it releases the bit and runs again (RX,
 * which sends responses only, queues the TX work), so the caller has
 * nothing more to do.
 */
static bool xiw_sched_request(struct xiw_qp_dp *dp)
{
	set_bit(XIW_DP_TX_MORE, &dp->flags);
	/* TX_MORE before reading TX_BUSY; pairs with xiw_sched_run(). */
	smp_mb__after_atomic();
	return test_bit(XIW_DP_TX_BUSY, &dp->flags);
}

/*
 * The online CPU after this one (wrapping around), nr_cpu_ids if there is
 * no other: posters and RX passes on different CPUs spread their hand-offs.
 */
static unsigned int xiw_sched_next_cpu(void)
{
	unsigned int self = raw_smp_processor_id();
	unsigned int cpu = cpumask_next(self, cpu_online_mask);

	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first(cpu_online_mask);
	return cpu == self ? nr_cpu_ids : cpu;
}

/* Have the TX work run on @cpu, unless a runner owns TX already. */
static void xiw_sched_queue_on(struct xiw_qp_dp *dp, unsigned int cpu)
{
	if (xiw_sched_request(dp))
		return;
	if (queue_work_on(cpu, xiw_sched_wq(dp, cpu), &dp->tx_work))
		xiw_dp_stat_add(dp, XIW_STAT_TX_WORK_QUEUED, 1);
}

/*
 * Is a kernel post that may not sleep alone, so that handing it to the
 * next CPU would only add the hop to its latency? The hand-off pays when
 * posts pile up before the TX work runs (a ULP at queue depth: the work
 * then sends them together while the ULP goes on), which the work
 * measures when it starts (dp->defer_batch: more than one post handed
 * over since its last start; a post is one ib_post_send() call, so
 * nvmet's Write and Send chained in one call count once). A post is
 * alone when the last start found one, and no runner or queued work has
 * TX: it is sent at once, from the post (xiw_sched_from_post()). Every
 * 16th such post is handed over all the same, so that a load that grows
 * is seen again. Racy reads and a lost probe count only move one post to
 * the other path.
 *
 * A post that may sleep is always handed over: NFS's RPC tasks and nfsd
 * threads post one at a time at any queue depth, so nothing piles up,
 * yet the other CPU's work spares them the send (and on one host the
 * peer's receive that the send runs): sent at once, NFS's 4 KiB reads
 * in one VM fell from 4,011 to 2,679 IOPS (performance.md, "Storage
 * between two VMs: atomic posts and one-page copies").
 */
static bool xiw_sched_post_alone(struct xiw_qp_dp *dp)
{
	u8 probe;

	if (preemptible() && !rcu_preempt_depth())
		return false;
	if (READ_ONCE(dp->defer_batch) ||
	    test_bit(XIW_DP_TX_BUSY, &dp->flags) || work_pending(&dp->tx_work))
		return false;
	probe = READ_ONCE(dp->defer_probe) + 1;
	WRITE_ONCE(dp->defer_probe, probe);
	return probe % 16;
}

/*
 * Hand TX to the work item on another CPU; the poster goes on. For the
 * doorbell of a user poster in a burst (XIW_DOORBELL_SQ_BATCH: it posts
 * again before it looks for this WR's completion) and for the posts of a
 * kernel consumer (xiw_sched_post_alone() sends a lone one that may not
 * sleep at once).
 *
 * Run inline, TX would do the whole round trip in the poster's context -
 * on one host the peer's answer is processed on the way back - so only one
 * WR would ever be in flight and every WR would leave alone. On another
 * CPU, TX finds the poster's next WRs piled up and sends them as one
 * batch, while the poster goes on with its own work: for a user, the
 * next WQEs, which need no syscall because XIW_SQ_KERNEL_ACTIVE is set
 * now (that runner looks at the SQ without a doorbell: the flag's
 * contract, see xiw_sched_sq_idle()); for a kernel ULP, the rest of its
 * completion batch (nvmet answers up to 16 commands per CQ poll, each
 * with a Write and a Send) or of its queue_rq calls. That buys a loaded
 * ULP far more I/O per CPU second, but a lone request waits for the hop
 * (NEWS, "Kernel posts on the next CPU"); the kernel_tx_inline module
 * parameter (xiw_qp.c) keeps every kernel post inline.
 * siw and rxe also hand kernel posts to a worker. A runner that owns TX
 * already just gets TX_MORE.
 *
 * On the poster's own CPU the high-priority work would preempt it at once
 * and nothing would pile up, so with a single CPU online TX runs inline
 * as for any other doorbell. The CPU is a hint: bound work queued on a
 * CPU going offline runs on another one (workqueue unbinds it).
 */
void xiw_sched_defer(struct xiw_qp_dp *dp)
{
	unsigned int cpu = xiw_sched_next_cpu();
	struct xiw_qp *qp = dp->qp;

	if (cpu >= nr_cpu_ids || (qp->user && !qp->sq.ctrl) ||
	    (!qp->user && xiw_sched_post_alone(dp))) {
		xiw_sched_kick(dp, true);
		return;
	}
	if (qp->user)
		xiw_sched_sq_active(qp);
	else
		atomic_inc(&dp->defer_posts);
	xiw_sched_queue_on(dp, cpu);
}

/*
 * RX queued @n inbound requests in one pass, @all_short if each of them
 * is short (xiw_irqe_short()): answer them from RX (xiw_sched_from_rx()), or,
 * when the pass brought a burst of short ones (a requester with many
 * atomics or small Reads in flight), from the TX work on the next CPU.
 *
 * Why: on one host everything a request causes runs on the CPU whose
 * send delivered it (loopback RX runs in that CPU's softirq): the
 * requester's TX, the responder's RX, the responses RX sends and, through
 * them, the requester's RX and completions. With a burst in flight that
 * one CPU is the bottleneck while the other runs the requester's poller.
 * Answering from the next CPU's TX work moves the responses and the
 * requester's RX that they trigger there, at the cost of one work item
 * per burst. A lone request (a latency test, a pass of fewer than
 * resp_handoff_min) is still answered right here, without the hop
 * (NEWS, "Responses of a burst on the next
 * CPU"). Long Reads, Flush and Verify go to the TX work anyway.
 */
void xiw_sched_answer(struct xiw_qp_dp *dp, u32 n, bool all_short)
{
	unsigned int min = READ_ONCE(resp_handoff_min);
	unsigned int cpu = nr_cpu_ids;

	/* the next CPU is looked up only for a burst: not per lone request */
	if (min && n >= min && all_short)
		cpu = xiw_sched_next_cpu();
	if (cpu >= nr_cpu_ids) {
		xiw_sched_from_rx(dp);
		return;
	}
	xiw_dp_stat_add(dp, XIW_STAT_RESP_HANDOFFS, 1);
	xiw_sched_queue_on(dp, cpu);
}

/*
 * A kernel consumer posted from a context that may not sleep: blk-mq's
 * queue_rq inside its RCU section (nvme-rdma), a bio's completion in
 * softirq (nvmet), a spinlock's section. Send its short WRs right here,
 * under the socket's spinlock, as RX sends its responses
 * (xiw_sched_from_rx(), whose reasons why that is legal apply word for
 * word: MSG_DONTWAIT, GFP_ATOMIC, the socket's own page fragment, at
 * most one FPDU of XIW_TX_POST_MAX payload bytes or one batch per call),
 * instead of queueing the TX work on this CPU: between two hosts of one
 * CPU each that work item was two context switches per I/O, and the
 * poster's CPU is the one that runs it anyway. With other CPUs online,
 * a lone post comes here too (xiw_sched_post_alone()) rather than wait
 * for the next CPU's work.
 *
 * Only when nothing else is TX's to do (xiw_sched_rx_may_send(): no
 * FPDU or message half sent, no response due, no Terminate) and nobody
 * holds the socket: the spinlock is only tried, since the poster may be
 * inside RX of this very socket (a completion handler that posts), and
 * a task that owns the socket (lock_sock(), the TX work in sendmsg) has
 * its sends in progress. Not with interrupts off: TCP's transmit path
 * enables bottom halves on the way. WRs longer than XIW_TX_POST_MAX, and
 * everything the post leaves, go to the TX work as before.
 *
 * Completions of the WRs sent here are delivered here, as ib_post_send()
 * of a QP whose TX runs inline does: a completion handler must not take
 * a lock its poster holds across ib_post_send() (ib_alloc_cq()'s
 * handlers only schedule the poll).
 *
 * True if the post ran TX, or handed it to the runner that owns TX.
 * xiw_sched_post_pass(): the pass, socket spinlock held, not owned.
 */
static bool xiw_sched_post_pass(struct xiw_qp_dp *dp, bool *left)
{
	bool ran = false;
	int rv;

	if (test_and_set_bit_lock(XIW_DP_TX_BUSY, &dp->flags))
		/* the owner runs again if it sees TX_MORE */
		return xiw_sched_request(dp);
	/*
	 * TX_MORE stays as it is: a kick before this one may be for work
	 * the post does not do, and then the TX work runs after it.
	 */
	if (xiw_sched_rx_may_send(dp) && !xiw_dp_irq_pending(dp)) {
		dp->tx.post_left = false;
		rv = xiw_sched_locked_pass(dp, XIW_TX_RUN_POST);
		xiw_tx_zc_abandon(dp);
		xiw_sched_note_load(dp, rv);
		*left = rv > 0 || dp->tx.post_left;
		ran = true;
	}
	clear_bit_unlock(XIW_DP_TX_BUSY, &dp->flags);
	/* Pairs with the set_bit(TX_MORE) of a kick that saw TX_BUSY. */
	smp_mb__after_atomic();
	return ran;
}

/* On by default; off gives the TX work every such post, for an A/B. */
static bool kernel_tx_post = true;
module_param(kernel_tx_post, bool, 0644);
MODULE_PARM_DESC(kernel_tx_post,
		 "kernel ULPs' posts from contexts that may not sleep send their short WRs themselves, under the socket's spinlock, instead of queueing the TX work (default on)");

static bool xiw_sched_from_post(struct xiw_qp_dp *dp)
{
	struct sock *sk = dp->sk;
	bool ran = false, left = false;

	if (dp->qp->user || !READ_ONCE(kernel_tx_post) || irqs_disabled() ||
	    in_hardirq() || in_nmi())
		return false;
	if (!spin_trylock_bh(&sk->sk_lock.slock))
		return false;
	if (!sock_owned_by_user_nocheck(sk))
		ran = xiw_sched_post_pass(dp, &left);
	spin_unlock_bh(&sk->sk_lock.slock);
	if (!ran)
		return false;
	/*
	 * The TX work takes over what the post left: a long WR, the burst
	 * budget spent, a kick that came in meanwhile. A full socket waits
	 * for sk_write_space.
	 */
	if ((left || test_bit(XIW_DP_TX_MORE, &dp->flags)) &&
	    !test_bit(XIW_DP_TX_NOSPACE, &dp->flags))
		xiw_sched_queue(dp);
	return true;
}

/*
 * Make TX run. @inline_ok: the caller may run TX itself if it can sleep
 * (false from RX, which holds the socket lock, and from error paths); a
 * kernel consumer's post that cannot sleep sends its short WRs itself
 * (xiw_sched_from_post()).
 */
void xiw_sched_kick(struct xiw_qp_dp *dp, bool inline_ok)
{
	/*
	 * TX may sleep (lock_sock): not in atomic context and not inside an
	 * RCU read-side section, which preemptible() alone does not tell
	 * under PREEMPT_RCU.
	 */
	bool may_sleep = inline_ok && preemptible() && !rcu_preempt_depth();

	if (inline_ok && !may_sleep &&
	    !test_bit(XIW_DP_TX_NOSPACE, &dp->flags) &&
	    xiw_sched_from_post(dp))
		return;
	if (xiw_sched_request(dp))
		return;
	if (may_sleep && !test_bit(XIW_DP_TX_NOSPACE, &dp->flags))
		xiw_sched_run(dp);
	else
		xiw_sched_queue(dp);
}
