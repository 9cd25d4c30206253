// SPDX-License-Identifier: GPL-2.0
/*
 * xiw_tcgprof - a QEMU TCG plugin that counts the guest instructions each
 * function executes between two marks the guest sets, and names the
 * functions with the guest kernel's own symbols.
 *
 * Why: the bench's VMs run under TCG without a PMU, so perf can only take
 * timer samples, and starting or stopping perf in a busy two-vCPU guest
 * patches kernel text in a way multi-threaded TCG does not survive
 * (testing.md, "Oops: int3"). Counting in the emulator changes nothing in
 * the guest: no probe, no patched instruction, no interrupt. Counts are
 * instructions, not time; under TCG an instruction's cost varies (a
 * locked one or an MMIO access costs more), so they rank work, they do
 * not clock it.
 *
 * How: every translated block gets an inline counter (one add in the
 * generated code, no call); blocks are keyed by (address, length), so a
 * retranslated block keeps its counter. A thread watches the directory
 * given as ctl=DIR, which the guest shares with the host (its test output
 * directory over 9p):
 *
 *	guest writes prof.start ("LABEL")	-> plugin takes a snapshot of
 *						  every counter, deletes it
 *	guest writes prof.syms (/proc/kallsyms), then prof.stop
 *						-> plugin takes the difference,
 *						   writes prof-LABEL.txt
 *
 * prof-LABEL.txt, one line each "INSNS EXECS NAME": "[all]" and "[user]",
 * "[user FILE]" per executable file if the test wrote prof.maps (a
 * /proc/PID/maps; every process must have that layout), "[module M]" per kernel module ("vmlinux" for the rest), then
 * every kernel function that ran, as "function" or "function [module]",
 * with the instructions and block executions counted in it. The test
 * divides by its ops (tools/bench/insn_profile.sh). With
 * blocks=M1:M2, also prof-LABEL.blocks: the same lines per translated
 * block of those modules, named "function+0xOFFSET [module]"
 * (tools/tcgprof/annotate.sh turns them into source lines).
 * Increments from two vCPUs running one block at the same moment can
 * lose one another (the add is not atomic); that is rare and small.
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "qemu_plugin_api.h"

extern "C" {
__attribute__((visibility("default"))) int qemu_plugin_version = 1;
__attribute__((visibility("default"))) int
qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *info,
		    int argc, char **argv);
}

namespace {

namespace fs = std::filesystem;

struct Block {
	uint64_t vaddr;
	uint32_t insns;
	uint64_t execs;		/* incremented by the generated code */
};

struct BlockKey {
	uint64_t vaddr;
	uint32_t insns;
	bool operator==(const BlockKey &) const = default;
};

struct BlockKeyHash {
	size_t operator()(const BlockKey &k) const
	{
		return std::hash<uint64_t>()(k.vaddr * 1021 + k.insns);
	}
};

std::mutex blocks_lock;
std::deque<Block> blocks;	/* stable addresses: counters live here */
std::unordered_map<BlockKey, Block *, BlockKeyHash> block_index;

fs::path ctl_dir;
std::atomic<bool> stopping;
std::thread watcher;

constexpr uint64_t kernel_start = 0xffff800000000000ULL;

void on_translate(qemu_plugin_id_t, struct qemu_plugin_tb *tb)
{
	BlockKey key{qemu_plugin_tb_vaddr(tb),
		     static_cast<uint32_t>(qemu_plugin_tb_n_insns(tb))};
	Block *b;
	{
		std::lock_guard<std::mutex> g(blocks_lock);
		auto it = block_index.find(key);
		if (it == block_index.end()) {
			b = &blocks.emplace_back(Block{key.vaddr, key.insns, 0});
			block_index.emplace(key, b);
		} else {
			b = it->second;
		}
	}
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &b->execs, 1);
}

std::vector<uint64_t> snapshot()
{
	std::lock_guard<std::mutex> g(blocks_lock);
	std::vector<uint64_t> v;

	v.reserve(blocks.size());
	for (auto &b : blocks)
		v.push_back(std::atomic_ref<uint64_t>(b.execs).load(std::memory_order_relaxed));
	return v;
}

struct Symbol {
	uint64_t addr;
	std::string name;	/* "func" or "func [module]" */
};

/* the text symbols of a /proc/kallsyms copy, by address */
std::vector<Symbol> read_kallsyms(const fs::path &p)
{
	std::vector<Symbol> syms;
	std::ifstream in(p);
	std::string line;

	while (std::getline(in, line)) {
		std::istringstream ls(line);
		std::string addr, type, name, mod;

		if (!(ls >> addr >> type >> name))
			continue;
		if (type != "t" && type != "T" && type != "w" && type != "W")
			continue;
		if (ls >> mod)
			name += " " + mod;
		syms.push_back({std::stoull(addr, nullptr, 16), name});
	}
	std::sort(syms.begin(), syms.end(),
		  [](const Symbol &a, const Symbol &b) { return a.addr < b.addr; });
	return syms;
}

struct Mapping {
	uint64_t start, end;
	std::string file;
};

/*
 * The executable file mappings of a /proc/PID/maps copy (prof.maps, if
 * the test wrote one): user-space instructions are split by the file
 * they ran in. Only meaningful when every process counted has the same
 * layout (the test turns address space randomization off).
 */
std::vector<Mapping> read_maps(const fs::path &p)
{
	std::vector<Mapping> maps;
	std::ifstream in(p);
	std::string line;

	while (std::getline(in, line)) {
		std::istringstream ls(line);
		std::string range, perms, off, dev, inode, file;

		if (!(ls >> range >> perms >> off >> dev >> inode >> file) ||
		    perms.find('x') == std::string::npos)
			continue;
		auto dash = range.find('-');
		if (dash == std::string::npos)
			continue;
		maps.push_back({std::stoull(range.substr(0, dash), nullptr, 16),
				std::stoull(range.substr(dash + 1), nullptr, 16),
				fs::path(file).filename().string()});
	}
	return maps;
}

const std::string &file_of(const std::vector<Mapping> &maps, uint64_t a)
{
	static const std::string other = "other";

	for (auto &m : maps)
		if (a >= m.start && a < m.end)
			return m.file;
	return other;
}

/* the symbol @a is in, nullptr if below every symbol */
const Symbol *symbol_of(const std::vector<Symbol> &syms, uint64_t a)
{
	auto it = std::upper_bound(syms.begin(), syms.end(), a,
				   [](uint64_t v, const Symbol &s) { return v < s.addr; });
	return it == syms.begin() ? nullptr : &*std::prev(it);
}

/* modules whose blocks are listed one by one (blocks=M1:M2) */
std::vector<std::string> block_modules;

bool lists_blocks(const std::string &name)
{
	for (auto &m : block_modules)
		if (name.ends_with(" [" + m + "]"))
			return true;
	return false;
}

void report(const std::string &label, const std::vector<uint64_t> &base, const std::vector<uint64_t> &end)
{
	auto syms = read_kallsyms(ctl_dir / "prof.syms");
	auto maps = read_maps(ctl_dir / "prof.maps");
	std::map<std::string, uint64_t> by_file;
	struct Sum {
		uint64_t insns = 0, execs = 0;
	};
	std::map<std::string, Sum> by_sym;
	std::map<std::string, Sum> by_block;	/* "func+0xOFF [module]" */
	uint64_t total = 0, user = 0;
	static const std::string unknown = "[kernel, no symbol]";

	{
		std::lock_guard<std::mutex> g(blocks_lock);
		size_t i = 0;

		for (auto it = blocks.begin(); i < end.size(); ++it, ++i) {
			uint64_t d = end[i] - (i < base.size() ? base[i] : 0);

			if (!d)
				continue;
			uint64_t n = d * it->insns;

			total += n;
			if (it->vaddr < kernel_start) {
				user += n;
				if (!maps.empty())
					by_file[file_of(maps, it->vaddr)] += n;
				continue;
			}
			const Symbol *sym = symbol_of(syms, it->vaddr);
			const std::string &name = sym ? sym->name : unknown;
			auto &s = by_sym[name];

			s.insns += n;
			s.execs += d;
			if (sym && lists_blocks(name)) {
				char off[32];
				auto sp = name.find(' ');

				std::snprintf(off, sizeof(off), "+0x%llx",
					      (unsigned long long)(it->vaddr - sym->addr));
				auto &b = by_block[name.substr(0, sp) + off + name.substr(sp)];
				b.insns += n;
				b.execs += d;
			}
		}
	}
	std::vector<std::pair<std::string, Sum>> sorted(by_sym.begin(), by_sym.end());
	std::sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) {
		return a.second.insns > b.second.insns;
	});
	std::map<std::string, uint64_t> by_module;
	for (auto &[name, s] : sorted) {
		auto p = name.find(" [");
		by_module[p == std::string::npos ? "[kernel]" : name.substr(p + 1)] += s.insns;
	}

	fs::path tmp = ctl_dir / ("prof-" + label + ".tmp");
	FILE *f = std::fopen(tmp.c_str(), "w");
	if (!f)
		return;
	std::fprintf(f, "%llu %llu [all]\n", (unsigned long long)total, 0ULL);
	std::fprintf(f, "%llu %llu [user]\n", (unsigned long long)user, 0ULL);
	for (auto &[file, n] : by_file)
		std::fprintf(f, "%llu %llu [user %s]\n", (unsigned long long)n,
			     0ULL, file.c_str());
	for (auto &[m, n] : by_module)
		std::fprintf(f, "%llu %llu %s\n", (unsigned long long)n, 0ULL,
			     m == "[kernel]" ? "[module vmlinux]" :
			     ("[module " + m.substr(1)).c_str());
	for (auto &[name, s] : sorted)
		std::fprintf(f, "%llu %llu %s\n", (unsigned long long)s.insns,
			     (unsigned long long)s.execs, name.c_str());
	std::fclose(f);
	if (!block_modules.empty()) {
		fs::path btmp = ctl_dir / ("prof-" + label + ".blocks.tmp");
		FILE *bf = std::fopen(btmp.c_str(), "w");

		if (bf) {
			for (auto &[name, b] : by_block)
				std::fprintf(bf, "%llu %llu %s\n",
					     (unsigned long long)b.insns,
					     (unsigned long long)b.execs, name.c_str());
			std::fclose(bf);
			fs::rename(btmp, ctl_dir / ("prof-" + label + ".blocks"));
		}
	}
	/* last: the guest waits for this file */
	fs::rename(tmp, ctl_dir / ("prof-" + label + ".txt"));
}

void watch()
{
	std::vector<uint64_t> base;
	std::string label;
	bool running = false;
	std::error_code ec;

	while (!stopping.load()) {
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		if (!running && fs::exists(ctl_dir / "prof.start", ec)) {
			std::ifstream in(ctl_dir / "prof.start");

			label = "run";
			in >> label;
			base = snapshot();
			running = true;
			fs::remove(ctl_dir / "prof.start", ec);
		} else if (running && fs::exists(ctl_dir / "prof.stop", ec)) {
			auto end = snapshot();

			fs::remove(ctl_dir / "prof.stop", ec);
			report(label, base, end);
			running = false;
		}
	}
}

void on_exit(qemu_plugin_id_t, void *)
{
	stopping.store(true);
	if (watcher.joinable())
		watcher.join();
}

} // namespace

int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t *,
			int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		std::string a = argv[i];

		if (a.rfind("ctl=", 0) == 0)
			ctl_dir = a.substr(4);
		if (a.rfind("blocks=", 0) == 0) {
			std::istringstream ms(a.substr(7));
			std::string m;

			while (std::getline(ms, m, ':'))
				if (!m.empty())
					block_modules.push_back(m);
		}
	}
	if (ctl_dir.empty()) {
		qemu_plugin_outs("xiw_tcgprof: give ctl=DIR\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_exit, nullptr);
	watcher = std::thread(watch);
	return 0;
}
