// hnswlib_bench: the C++ hnswlib side of the peer comparison. Same inputs,
// sweep and JSON lines as `go run ./bench/cmd/ann`.
//
//   g++ -O3 -march=native -std=c++17 -pthread -o hnswlib_bench hnswlib_bench.cpp
//   ./hnswlib_bench BASE.fvecs QUERY.fvecs GT.ivecs METRIC M EFC EFLIST THREADS DATASET [INDEX]
//
// With INDEX, the index is loaded from that file when it exists (no build
// figures are reported) and built and saved there when it does not, so
// that repeated searches of one graph need not rebuild it (as ann -graph).
// METRIC is cosine (vectors normalized, inner-product space, as hnswlib's
// Python "cosine" does), dot or l2. Files must be uncompressed.
// bytes_per_vector is the growth of resident memory during the build / n.
#include <hnswlib/hnswlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

template <typename T>
static std::vector<T> read_vecs(const std::string &path, int &dim, size_t &n) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open " + path);
    std::vector<T> data;
    dim = 0;
    n = 0;
    int32_t d;
    while (f.read(reinterpret_cast<char *>(&d), 4)) {
        if (d <= 0 || d > 65536 || (dim && d != dim)) throw std::runtime_error("bad dimension in " + path);
        dim = d;
        size_t off = data.size();
        data.resize(off + d);
        if (!f.read(reinterpret_cast<char *>(data.data() + off), 4 * size_t(d)))
            throw std::runtime_error("truncated " + path);
        n++;
    }
    return data;
}

static long rss_bytes() {
    std::ifstream f("/proc/self/statm");
    long size = 0, rss = 0;
    f >> size >> rss;
    return rss * sysconf(_SC_PAGESIZE);
}

static double thread_cpu_us() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double process_cpu_s() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void normalize(std::vector<float> &v, int dim) {
    for (size_t i = 0; i < v.size(); i += dim) {
        double s = 0;
        for (int j = 0; j < dim; j++) s += double(v[i + j]) * v[i + j];
        if (s > 0) {
            float inv = float(1 / std::sqrt(s));
            for (int j = 0; j < dim; j++) v[i + j] *= inv;
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 10 && argc != 11) {
        fprintf(stderr, "usage: %s BASE QUERY GT METRIC M EFC EFLIST THREADS DATASET [INDEX]\n", argv[0]);
        return 2;
    }
    try {
        int dim, qdim, gdim;
        size_t n, nq, ng;
        std::vector<float> base = read_vecs<float>(argv[1], dim, n);
        std::vector<float> queries = read_vecs<float>(argv[2], qdim, nq);
        std::vector<int32_t> gt = read_vecs<int32_t>(argv[3], gdim, ng);
        if (qdim != dim || ng != nq || gdim < 10) throw std::runtime_error("inputs disagree");
        std::string metric = argv[4];
        int M = atoi(argv[5]), efc = atoi(argv[6]), threads = atoi(argv[8]);
        std::string dataset = argv[9];
        std::vector<int> efs;
        std::stringstream ss(argv[7]);
        for (std::string tok; std::getline(ss, tok, ',');) efs.push_back(atoi(tok.c_str()));

        hnswlib::SpaceInterface<float> *space;
        if (metric == "l2") {
            space = new hnswlib::L2Space(dim);
        } else if (metric == "cosine" || metric == "dot") {
            if (metric == "cosine") {
                normalize(base, dim);
                normalize(queries, dim);
            }
            space = new hnswlib::InnerProductSpace(dim);
        } else {
            throw std::runtime_error("unknown metric " + metric);
        }

        std::string saved = argc == 11 ? argv[10] : "";
        long rss0 = rss_bytes();
        double cpu0 = process_cpu_s();
        auto t0 = std::chrono::steady_clock::now();
        hnswlib::HierarchicalNSW<float> *index;
        double build_s = 0, build_cpu_s = 0, bytes_per_vector = 0;
        if (!saved.empty() && std::ifstream(saved).good()) {
            index = new hnswlib::HierarchicalNSW<float>(space, saved);
            if (index->cur_element_count != n) throw std::runtime_error(saved + ": another data set's index");
        } else {
            index = new hnswlib::HierarchicalNSW<float>(space, n, M, efc, 100);
            std::atomic<size_t> next{0};
            std::vector<std::thread> pool;
            for (int t = 0; t < threads; t++) {
                pool.emplace_back([&] {
                    for (size_t i; (i = next.fetch_add(1)) < n;) index->addPoint(base.data() + i * dim, i);
                });
            }
            for (auto &th : pool) th.join();
            build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            build_cpu_s = process_cpu_s() - cpu0;
            bytes_per_vector = double(rss_bytes() - rss0) / n;
            if (!saved.empty()) index->saveIndex(saved);
        }

        const int k = 10;
        std::vector<double> lat(nq), cpu_lat(nq);
        for (int ef : efs) {
            index->setEf(std::max(ef, k));
            for (size_t q = 0; q < std::min<size_t>(100, nq); q++) index->searchKnn(queries.data() + q * dim, k);
            double recall = 0;
            auto start = std::chrono::steady_clock::now();
            double start_cpu = thread_cpu_us();
            for (size_t q = 0; q < nq; q++) {
                auto a = std::chrono::steady_clock::now();
                double c = thread_cpu_us();
                auto res = index->searchKnn(queries.data() + q * dim, k);
                cpu_lat[q] = thread_cpu_us() - c;
                lat[q] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count();
                const int32_t *truth = gt.data() + q * gdim;
                while (!res.empty()) {
                    size_t label = res.top().second;
                    res.pop();
                    for (int j = 0; j < k; j++)
                        if (size_t(truth[j]) == label) {
                            recall++;
                            break;
                        }
                }
            }
            double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            double elapsed_cpu = (thread_cpu_us() - start_cpu) / 1e6;
            std::sort(lat.begin(), lat.end());
            std::sort(cpu_lat.begin(), cpu_lat.end());
            printf("{\"impl\":\"hnswlib-cpp\",\"dataset\":\"%s\",\"n\":%zu,\"dim\":%d,\"m\":%d,\"efc\":%d,"
                   "\"threads\":%d,\"ef\":%d,\"recall10\":%.4f,\"qps\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
                   "\"build_s\":%.2f,\"cpu_qps\":%.1f,\"cpu_p50_us\":%.1f,\"cpu_p99_us\":%.1f,\"build_cpu_s\":%.2f,"
                   "\"bytes_per_vector\":%.1f}\n",
                   dataset.c_str(), n, dim, M, efc, threads, ef, recall / (k * double(nq)), nq / elapsed,
                   lat[nq / 2], lat[nq * 99 / 100], build_s, nq / elapsed_cpu, cpu_lat[nq / 2],
                   cpu_lat[nq * 99 / 100], build_cpu_s, bytes_per_vector);
            fflush(stdout);
        }
        delete index;
        delete space;
    } catch (const std::exception &e) {
        fprintf(stderr, "hnswlib_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
