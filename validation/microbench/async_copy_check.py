#!/usr/bin/env python3
"""cuda-samples' globalToShmemAsyncCopy kernels on random inputs, on a GPU: do they compute A.B?

The sample checks its kernels with A = 1.0 and B = 0.01 everywhere, which hides two bugs that perfmodel's executor
reports (docs/corpus_failures.md): the LargeChunk kernels load the B tile with A's indexing, and the multi-stage
pipelines prefetch into the buffer the current stage reads (a data race on cp.async's destination). This script
takes the sample's kernel code as it is (from its first declaration after the includes to the host code), adds a
``main`` that fills A and B (1280 x 1280) with random floats, runs each cp.async kernel three times, and prints the
largest difference from two CPU products: A.B and the product the LargeChunk code as written computes. Needs nvcc
and a GPU of compute capability 8.0 or later.

    python validation/microbench/async_copy_check.py CUDA_SAMPLES_DIR [--arch sm_90]

Run on an H200 on 2026-11-26: ``validation/raw/h200_async_copy_check.txt``.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

SAMPLE = "Samples/3_CUDA_Features/globalToShmemAsyncCopy/globalToShmemAsyncCopy.cu"
HEADER = """#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <cuda/pipeline>
#include <cuda/barrier>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
"""
MAIN = r"""// perfmodel check: the sample's kernels on random inputs against two CPU references
static void ref_intended(const float *A, const float *B, double *C, int n) {
  for (int i = 0; i < n; ++i) for (int j = 0; j < n; ++j) C[i*n+j] = 0;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      double a = A[i*n+k];
      for (int j = 0; j < n; ++j) C[i*n+j] += a * B[k*n+j];
    }
}
static void ref_as_written(const float *A, const float *B, double *C, int n) {  // B tile loaded with A's index
  const int bs = 16;
  for (int by = 0; by < n / bs; ++by) {
    double tile[16][16] = {{0}};
    for (int kt = 0; kt < n / bs; ++kt)
      for (int ty = 0; ty < bs; ++ty) for (int tx = 0; tx < bs; ++tx) {
        double s = 0;
        for (int k = 0; k < bs; ++k) s += (double)A[(by*bs+ty)*n + kt*bs + k] * B[(by*bs+k)*n + kt*bs + tx];
        tile[ty][tx] += s;
      }
    for (int ty = 0; ty < bs; ++ty) for (int j = 0; j < n; ++j) C[(by*bs+ty)*n + j] = tile[ty][j % bs];
  }
}
static double maxdiff(const float *g, const double *r, int m) {
  double d = 0;
  for (int i = 0; i < m; ++i) d = fmax(d, fabs(g[i] - r[i]));
  return d;
}
int main() {
  const int n = 1280, m = n * n;
  float *A = (float*)malloc(m*4), *B = (float*)malloc(m*4), *C = (float*)malloc(m*4);
  double *R1 = (double*)malloc(m*8), *R2 = (double*)malloc(m*8);
  unsigned s = 12345u;
  for (int i = 0; i < m; ++i) { s = s*1664525u + 1013904223u; A[i] = (s >> 8) / 16777216.0f * 2 - 1; }
  for (int i = 0; i < m; ++i) { s = s*1664525u + 1013904223u; B[i] = (s >> 8) / 16777216.0f * 2 - 1; }
  ref_intended(A, B, R1, n); ref_as_written(A, B, R2, n);
  float *dA, *dB, *dC; cudaMalloc(&dA, m*4); cudaMalloc(&dB, m*4); cudaMalloc(&dC, m*4);
  cudaMemcpy(dA, A, m*4, cudaMemcpyHostToDevice); cudaMemcpy(dB, B, m*4, cudaMemcpyHostToDevice);
  dim3 th(16, 16), gr(n / 16, n / 16);
  const char *names[] = {"SingleStage", "MultiStage", "LargeChunk", "MultiStageLargeChunk", "NaiveLargeChunk"};
  for (int rep = 0; rep < 3; ++rep)
  for (int k = 0; k < 5; ++k) {
    cudaMemset(dC, 0, m*4);
    if (k == 0) MatrixMulAsyncCopySingleStage<16><<<gr, th>>>(dC, dA, dB, n, n);
    if (k == 1) MatrixMulAsyncCopyMultiStage<16><<<gr, th>>>(dC, dA, dB, n, n);
    if (k == 2) MatrixMulAsyncCopyLargeChunk<16><<<gr, th>>>(dC, dA, dB, n, n);
    if (k == 3) MatrixMulAsyncCopyMultiStageLargeChunk<16><<<gr, th>>>(dC, dA, dB, n, n);
    if (k == 4) MatrixMulNaiveLargeChunk<16><<<gr, th>>>(dC, dA, dB, n, n);
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(C, dC, m*4, cudaMemcpyDeviceToHost);
    printf("rep %d %-22s err=%s  max|C - A.B| = %.3g   max|C - as_written| = %.3g\n", rep, names[k],
           cudaGetErrorString(e), maxdiff(C, R1, m), maxdiff(C, R2, m));
  }
  return 0;
}
"""


def harness(sample: str) -> str:
    lines = sample.splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith("enum kernels"))
    end = next(i for i, s in enumerate(lines) if s.startswith("void ConstantInit"))
    return HEADER + "\n".join(lines[start:end]) + "\n" + MAIN


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("samples", type=Path)
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cu, exe = Path(tmp) / "async_copy_check.cu", Path(tmp) / "async_copy_check"
        cu.write_text(harness((args.samples / SAMPLE).read_text()))
        subprocess.run(["nvcc", f"-arch={args.arch}", "-std=c++17", "-O2", "-o", str(exe), str(cu)], check=True,
                       stderr=subprocess.DEVNULL)
        return subprocess.run([str(exe)]).returncode


if __name__ == "__main__":
    sys.exit(main())
