// A downstream program: a vector on the default memory kind, a view, and a sum.
#include <arrayport/arrayport.hpp>

#include <cstdio>

int main() {
  arrayport::vector<float> v(1000, 0.5f);  // managed with a GPU, host without
  auto host = v.to_host();
  double sum = 0;
  for (float x : host) sum += x;
  std::printf("arrayport %s: %zu elements of %s memory, sum %.1f, devices %d\n",
              ARRAYPORT_VERSION_STRING, v.size(), std::string(arrayport::to_string(v.kind())).c_str(),
              sum, arrayport::device_count());
  return sum == 500.0 ? 0 : 1;
}
