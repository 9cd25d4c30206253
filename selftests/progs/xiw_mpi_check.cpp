// SPDX-License-Identifier: GPL-2.0
// xiw_mpi_check: a small MPI job whose results are checked and whose
// figures are those make bench wants beside hpcc's: ping-pong latency
// (8 B) and bandwidth (1 MiB) between rank 0 and the last rank, and
// MPI_Allreduce latency (one double) and bandwidth (1 MiB of int64).
// Every message and every reduction is verified against what the ranks
// must have computed; a wrong byte ends the job with "FAIL ..." and exit
// status 1. Rank 0 prints one "result" line of exact, transport-independent
// values (sums of the reductions and a hash of every received payload), so
// the same job over two transports must print the same line, and timing
// lines:
//   lat_us=MEDIAN bw_MBps=RATE allreduce_us=MEDIAN allreduce_MBps=RATE
// Options: -n ITERS (latency iterations, default 1000), -b ITERS (1 MiB
// ping-pongs and reductions, default 20).
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <unistd.h>

namespace {

int rank, nranks;

[[noreturn]] void die(const std::string &why)
{
	std::fprintf(stdout, "FAIL rank %d: %s\n", rank, why.c_str());
	std::fflush(stdout);
	MPI_Abort(MPI_COMM_WORLD, 1);
	std::exit(1);
}

// byte I of message SEQ from rank FROM: any swap, loss or shift shows
uint8_t pattern(int from, int seq, size_t i)
{
	uint64_t x = (uint64_t)from * 0x9e3779b97f4a7c15ull ^ (uint64_t)seq << 32 ^ i;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	return (uint8_t)(x >> 56);
}

void fill(std::vector<uint8_t> &b, int from, int seq)
{
	for (size_t i = 0; i < b.size(); i++)
		b[i] = pattern(from, seq, i);
}

uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *c = (const uint8_t *)p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ull;
	return h;
}

void check(const std::vector<uint8_t> &b, int from, int seq, const char *what)
{
	for (size_t i = 0; i < b.size(); i++)
		if (b[i] != pattern(from, seq, i))
			die(std::string(what) + ": message " + std::to_string(seq) +
			    " from rank " + std::to_string(from) + ", byte " +
			    std::to_string(i) + " wrong");
}

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
	int lat_iters = 1000, bw_iters = 20, c;
	const size_t big = 1 << 20;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((c = getopt(argc, argv, "n:b:")) != -1) {
		if (c == 'n')
			lat_iters = std::atoi(optarg);
		else if (c == 'b')
			bw_iters = std::atoi(optarg);
		else
			die("usage: xiw_mpi_check [-n LAT_ITERS] [-b BW_ITERS]");
	}
	if (nranks < 2 || lat_iters < 1 || bw_iters < 1)
		die("needs 2 ranks or more and positive counts");

	char host[256] = "";
	gethostname(host, sizeof(host) - 1);
	std::vector<char> hosts(256 * nranks);
	MPI_Gather(host, 256, MPI_CHAR, hosts.data(), 256, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank == 0)
		for (int r = 0; r < nranks; r++)
			std::printf("rank %d on %s\n", r, &hosts[256 * r]);

	// Ping-pong between rank 0 and the last rank, the others wait.
	const int peer = nranks - 1;
	uint64_t hash = 0xcbf29ce484222325ull;
	std::vector<double> lat;
	double bw_s = 0;
	for (size_t size : {(size_t)8, big}) {
		int iters = size == 8 ? lat_iters : bw_iters;
		std::vector<uint8_t> out(size), in(size);
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (int i = 0; i < iters && (rank == 0 || rank == peer); i++) {
			double t = MPI_Wtime();
			if (rank == 0) {
				fill(out, 0, i);
				MPI_Send(out.data(), size, MPI_BYTE, peer, i, MPI_COMM_WORLD);
				MPI_Recv(in.data(), size, MPI_BYTE, peer, i, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				if (size == 8)
					lat.push_back((MPI_Wtime() - t) / 2 * 1e6);
				check(in, peer, i, "ping-pong reply");
				hash = fnv(hash, in.data(), size);
			} else {
				MPI_Recv(in.data(), size, MPI_BYTE, 0, i, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				check(in, 0, i, "ping-pong request");
				fill(out, peer, i);
				MPI_Send(out.data(), size, MPI_BYTE, 0, i, MPI_COMM_WORLD);
			}
		}
		if (size == big)
			bw_s = MPI_Wtime() - t0;
	}

	// Allreduce: one double, then 1 MiB of int64, every rank a known part.
	std::vector<double> ared;
	double one = 0, sum1 = 0;
	for (int i = 0; i < lat_iters; i++) {
		double mine = rank + i * 0.5, got;
		double t = MPI_Wtime();
		MPI_Allreduce(&mine, &got, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		ared.push_back((MPI_Wtime() - t) * 1e6);
		double want = nranks * (nranks - 1) / 2.0 + nranks * i * 0.5;
		if (got != want)
			die("allreduce of one double " + std::to_string(i) + ": " +
			    std::to_string(got) + ", expected " + std::to_string(want));
		one += got;
	}
	const size_t n64 = big / 8;
	std::vector<int64_t> v(n64), r(n64);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int i = 0; i < bw_iters; i++) {
		for (size_t k = 0; k < n64; k++)
			v[k] = (int64_t)(k * 7 + 1) * (rank + 1) + i;
		MPI_Allreduce(v.data(), r.data(), n64, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		int64_t tri = (int64_t)nranks * (nranks + 1) / 2;
		for (size_t k = 0; k < n64; k++)
			if (r[k] != (int64_t)(k * 7 + 1) * tri + (int64_t)nranks * i)
				die("allreduce of 1 MiB " + std::to_string(i) + ": element " +
				    std::to_string(k) + " wrong");
		sum1 += (double)r[n64 - 1];
		hash = fnv(hash, r.data(), big);
	}
	double ar_s = MPI_Wtime() - t0;
	(void)sum1;

	if (rank == 0) {
		std::printf("result ranks=%d pingpong=%d/%d allreduce_sum=%.1f hash=%016llx\n",
			    nranks, lat_iters, bw_iters, one, (unsigned long long)hash);
		std::printf("lat_us=%.2f bw_MBps=%.1f allreduce_us=%.2f allreduce_MBps=%.1f\n",
			    median(lat), 2.0 * bw_iters * big / bw_s / 1e6, median(ared),
			    (double)bw_iters * big / ar_s / 1e6);
		std::printf("ok\n");
	}
	MPI_Finalize();
	return 0;
}
