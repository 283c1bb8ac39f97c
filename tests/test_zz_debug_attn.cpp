#include "seqlab/mixers/feature_maps/performer.h"
#include "feature_map_testing.h"
using namespace seqlab;
using namespace seqlab::testing;
TEST(Dbg, X) {
  torch::manual_seed(2);
  PerformerImpl fm(map_config("performer", 8, 2, 8192));
  auto w = fm.w;
  std::cout << "w mean " << w.mean().item<double>() << " var " << w.var().item<double>() << "\n";
  std::cout << "w cov head0 " << torch::matmul(w[0].t(), w[0]) / 8192 << "\n";
  auto q = torch::randn({1, 2, 16, 4}) * 0.5;
  auto phi = fm.forward(q, true);
  std::cout << "sum phi^2*... mean feature*sqrtF " << (phi * std::sqrt(8192.0)).mean(-1) << "\n";
}
