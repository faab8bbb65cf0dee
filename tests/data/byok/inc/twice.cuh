// a header found through -I: the kernel's arithmetic lives here
__device__ inline float twice(float v) { return 2.0f * v; }
