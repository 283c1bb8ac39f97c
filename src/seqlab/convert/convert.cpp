#include "seqlab/convert/convert.h"

#include "seqlab/core/error.h"
#include "seqlab/core/log.h"
#include "seqlab/core/progress.h"
#include "seqlab/mixers/hybrid_attention.h"
#include "seqlab/mixers/linear_attention.h"
#include "seqlab/mixers/feature_maps/registry.h"
#include "seqlab/mixers/registry.h"
#include "seqlab/mixers/softmax_attention.h"
#include "seqlab/train/distributed.h"
#include "seqlab/train/optim.h"

#include <chrono>
#include <optional>

namespace seqlab {

void ConvertConfig::validate() const {
  MixerConfig probe;
  probe.arch = to;
  probe.feature_map = feature_map;
  probe.short_conv = short_conv;  // refused below 0 and for the hybrid, which has none
  SEQLAB_CHECK(decay > 0 && decay <= 1, "--decay must be in (0, 1], got {}", decay);
  SEQLAB_CHECK(window >= 0, "--window must be >= 0, got {}", window);
  SEQLAB_CHECK(transfer == "weights" || transfer == "output",
               "--transfer must be weights or output, got '{}'", transfer);
  probe.validate();  // unknown names are an error listing the known ones
  SEQLAB_CHECK(arch_entry(probe.arch).traits.feature_map,
               "--to must name a linear-attention feature map ({}), got '{}'", feature_map_names(),
               to);
  SEQLAB_CHECK(d_feature >= 0, "--d-feature must be >= 0, got {}", d_feature);
  SEQLAB_CHECK(distill_steps >= 0, "--distill-steps must be >= 0, got {}", distill_steps);
  SEQLAB_CHECK(distill_lr > 0, "--distill-lr must be positive, got {}", distill_lr);
  SEQLAB_CHECK(distill_batch > 0, "--distill-batch must be positive, got {}", distill_batch);
  SEQLAB_CHECK(distill_len >= 0, "--distill-len must be >= 0, got {}", distill_len);
}

nlohmann::json ConvertConfig::to_json() const {
  nlohmann::json j;
  const_cast<ConvertConfig*>(this)->visit(ToJsonVisitor{j});
  return j;
}

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::shared_ptr<SoftmaxAttentionImpl> softmax_of(SeqModelImpl& m, size_t l) {
  return std::dynamic_pointer_cast<SoftmaxAttentionImpl>(m.blocks->ptr<BlockImpl>(l)->mixer);
}

// Whether layer l of the student is a conversion target (linear or hybrid attention).
bool converted(SeqModelImpl& m, size_t l) {
  const auto& mixer = m.blocks->ptr<BlockImpl>(l)->mixer;
  return std::dynamic_pointer_cast<LinearAttentionImpl>(mixer) ||
         std::dynamic_pointer_cast<HybridAttentionImpl>(mixer);
}

// The student's attention weights of layer l on its input x: [B,H,T,T].
torch::Tensor student_weights(SeqModelImpl& m, size_t l, const torch::Tensor& x) {
  auto& mixer = m.blocks->ptr<BlockImpl>(l)->mixer;
  if (auto lin = std::dynamic_pointer_cast<LinearAttentionImpl>(mixer))
    return lin->attention_weights(x);
  if (auto hyb = std::dynamic_pointer_cast<HybridAttentionImpl>(mixer))
    return hyb->attention_weights(x);
  fail("attention transfer: layer {} of the student is neither linear nor hybrid attention", l);
}

// Row cross-entropy between teacher weights a and student weights b, both [B,H,T,T]; rows of a
// sum to one, so masked entries (a = 0) contribute nothing.
torch::Tensor row_cross_entropy(const torch::Tensor& a, const torch::Tensor& b) {
  return -(a * torch::log(b.clamp_min(1e-12))).sum(-1).mean();
}

// Layer l's transfer loss (see transfer_losses); the teacher's side runs without autograd.
torch::Tensor layer_loss(SeqModelImpl& teacher, SeqModelImpl& student, size_t l,
                         const torch::Tensor& x, const std::string& transfer) {
  torch::Tensor target;
  {
    torch::NoGradGuard ng;
    target = transfer == "output" ? teacher.blocks->ptr<BlockImpl>(l)->mixer->forward(x)
                                  : softmax_of(teacher, l)->attention_weights(x);
  }
  if (transfer == "output")
    return (student.blocks->ptr<BlockImpl>(l)->mixer->forward(x) - target).square().mean();
  return row_cross_entropy(target, student_weights(student, l, x));
}

// The student before the teacher's tensors go in, its new parameters drawn from `seed`. The
// short convolution's kernels draw from the generator too, shifting every later layer's draws:
// with them, every other tensor comes from a twin built without, so --short-conv adds identity
// kernels and changes nothing else (T2R, RFA and Performer draw their features at random).
SeqModel build_student(const ModelConfig& sc, uint64_t seed) {
  torch::manual_seed(seed);
  SeqModel student(sc);
  if (sc.mixer.short_conv == 0) return student;
  ModelConfig twin_cfg = sc;
  twin_cfg.mixer.short_conv = 0;
  torch::manual_seed(seed);
  SeqModel twin(twin_cfg);
  torch::NoGradGuard ng;
  auto dst = student->named_parameters();
  for (const auto& p : twin->named_parameters()) dst[p.key()].copy_(p.value());
  auto dst_buffers = student->named_buffers();
  for (const auto& b : twin->named_buffers()) dst_buffers[b.key()].copy_(b.value());
  return student;
}

}  // namespace

bool is_conversion_param(const std::string& name) {
  return name.find(".mixer.feature_map.") != std::string::npos ||
         ends_with(name, ".mixer.window_factor") || ends_with(name, ".mixer.gate_bias") ||
         ends_with(name, ".mixer.conv.weight");
}

SeqModel convert_model(SeqModelImpl& teacher, const ConvertConfig& cfg) {
  cfg.validate();
  const auto& tc = teacher.config();
  SEQLAB_CHECK(tc.mixer.arch == SoftmaxAttentionImpl::kArch,
               "convert: the model is not a softmax-attention model (its mixer is '{}'); only "
               "softmax Transformers are converted",
               arch_label(tc.mixer));
  SEQLAB_CHECK(tc.mixer.causal,
               "convert: the model is bidirectional; only causal models become RNNs");
  SEQLAB_CHECK(!teacher.adapters, "convert: merge the model's adapters first (finetune --merge)");
  ModelConfig sc = tc;
  sc.mixer.arch = cfg.to;
  if (cfg.to == HybridAttentionImpl::kArch) {
    SEQLAB_CHECK(cfg.window <= tc.mixer.max_len,
                 "convert: --window {} is larger than the model's context ({} tokens)", cfg.window,
                 tc.mixer.max_len);
    sc.mixer.feature_map = cfg.feature_map;
    sc.mixer.window = cfg.window;
    sc.mixer.decay = cfg.decay;
    sc.mixer.gate = cfg.gate;
  }
  sc.mixer.d_feature = cfg.d_feature;
  sc.mixer.short_conv = cfg.short_conv;
  sc.mixer.init_seed = cfg.init_seed;
  sc.validate();
  // The student keeps the teacher's position scheme: "auto" resolves alike for both attentions.
  auto student = build_student(sc, cfg.init_seed);
  torch::NoGradGuard ng;
  std::map<std::string, torch::Tensor> t_params;
  for (const auto& p : teacher.named_parameters()) t_params[p.key()] = p.value();
  for (const auto& b : teacher.named_buffers()) t_params[b.key()] = b.value();
  size_t copied = 0;
  for (auto& p : student->named_parameters()) {
    if (is_conversion_param(p.key())) continue;
    auto it = t_params.find(p.key());
    SEQLAB_CHECK(it != t_params.end() && it->second.sizes() == p.value().sizes(),
                 "convert: the student's tensor '{}' has no match in the teacher", p.key());
    p.value().copy_(it->second);
    ++copied;
  }
  size_t teacher_tensors = 0;
  for (const auto& [name, v] : t_params) teacher_tensors += !is_conversion_param(name);
  SEQLAB_CHECK(copied == teacher_tensors,
               "convert: copied {} of the teacher's {} tensors (the layouts differ)", copied,
               teacher_tensors);
  // The short convolution starts as the identity: the student computes what the plain
  // conversion does until attention transfer or finetuning trains the kernel.
  for (size_t l = 0; cfg.short_conv > 0 && l < student->blocks->size(); ++l)
    std::dynamic_pointer_cast<LinearAttentionImpl>(student->blocks->ptr<BlockImpl>(l)->mixer)
        ->set_identity_conv();
  student->eval();
  return student;
}

std::vector<double> transfer_losses(SeqModelImpl& teacher, SeqModelImpl& student,
                                    const torch::Tensor& tokens, const std::string& transfer) {
  torch::NoGradGuard ng;
  auto inputs = teacher.mixer_inputs(tokens);
  std::vector<double> out;
  for (size_t l = 0; l < inputs.size(); ++l)
    out.push_back(layer_loss(teacher, student, l, inputs[l], transfer).item<double>());
  return out;
}

namespace {

// Freezes everything but the student's feature maps and the whole teacher; returns the feature
// maps' parameters (named) and every student parameter's requires_grad before, to restore.
std::vector<std::pair<std::string, torch::Tensor>> feature_map_params(
    SeqModelImpl& teacher, SeqModelImpl& student, std::map<std::string, bool>& was) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (auto& p : student.named_parameters()) {
    was[p.key()] = p.value().requires_grad();
    const bool fm = is_conversion_param(p.key());
    p.value().set_requires_grad(fm);
    if (fm) named.emplace_back(p.key(), p.value());
  }
  SEQLAB_CHECK(!named.empty(),
               "attention transfer: feature map '{}' has no parameters to train (use t2r or "
               "hedgehog, add --short-conv K, or --distill-steps 0)",
               student.config().mixer.feature_map);
  for (auto& p : teacher.parameters()) p.set_requires_grad(false);
  return named;
}

// One step's gradients of the transfer loss on `tokens` (this rank's rows), accumulated into the
// feature maps' .grad; returns the loss, scaled by `share`. Layer by layer: each layer's loss
// depends only on its own feature maps (the inputs are the teacher's states), so its backward
// runs at once and frees its [B,H,T,T] temporaries before the next layer's are made; the
// gradients are those of the summed loss, bitwise.
double transfer_step_gradients(SeqModelImpl& teacher, SeqModelImpl& student,
                               const torch::Tensor& tokens, double share,
                               const std::string& transfer) {
  std::vector<torch::Tensor> inputs;
  {
    torch::NoGradGuard ng;
    inputs = teacher.mixer_inputs(tokens);
  }
  double total = 0;
  for (size_t l = 0; l < inputs.size(); ++l) {
    auto loss = layer_loss(teacher, student, l, inputs[l], transfer);
    if (share != 1) loss = loss * share;
    loss.backward();
    total += loss.item<double>();
  }
  return total;
}

}  // namespace

DistillReport distill_attention(SeqModelImpl& teacher, SeqModelImpl& student, const Task& task,
                                const ConvertConfig& cfg, int64_t length, DataParallel* dp) {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t L = student.blocks->size();
  for (size_t l = 0; l < L; ++l)
    SEQLAB_CHECK(softmax_of(teacher, l) && converted(student, l),
                 "attention transfer needs a softmax teacher and a linear or hybrid student");
  std::map<std::string, bool> was;
  const auto named = feature_map_params(teacher, student, was);
  std::vector<torch::Tensor> params;
  for (const auto& [name, p] : named) params.push_back(p);
  teacher.eval();
  student.eval();  // no dropout anywhere; eval keeps the model's behaviour fixed
  const bool root = !dp || dp->root();

  DistillReport rep;
  const auto held_out = task.sample(cfg.distill_batch, length, mix_seed(cfg.distill_seed, ~0ULL));
  if (root) rep.before = transfer_losses(teacher, student, held_out.input, cfg.transfer);
  AdamWOptions aopt;
  aopt.weight_decay = 0;
  AdamW opt(named, aopt);
  std::optional<Progress> bar;
  if (root) bar.emplace("attention transfer", cfg.distill_steps);
  const auto loop_start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < cfg.distill_steps; ++step) {
    // Every rank draws the same batch (the data cursor is the step) and keeps its shard of the
    // rows; its loss is scaled by its share of them, so the summed gradient is the whole batch's.
    auto tokens = task.sample(cfg.distill_batch, length, mix_seed(cfg.distill_seed, step)).input;
    double share = 1;
    if (dp) {
      const auto [lo, hi] = shard_rows(cfg.distill_batch, dp->rank(), dp->world_size());
      tokens = tokens.slice(0, lo, hi);
      share = static_cast<double>(hi - lo) / static_cast<double>(cfg.distill_batch);
    }
    opt.zero_grad();
    double loss = transfer_step_gradients(teacher, student, tokens, share, cfg.transfer);
    if (dp) {
      std::vector<torch::Tensor> grads;
      for (auto& p : params)
        if (p.grad().defined()) grads.push_back(p.mutable_grad());
      dp->allreduce_sum(grads);
      loss = dp->allreduce_values({loss})[0];
    }
    clip_grad_norm(params, 1.0);
    opt.step(lr_at(step, cfg.distill_steps, cfg.distill_steps / 20, cfg.distill_lr, 0.1));
    if (bar) bar->update(step + 1, fmt::format("loss {:.4f}", loss / static_cast<double>(L)));
  }
  if (bar) bar->finish();
  rep.step_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  if (root) rep.after = transfer_losses(teacher, student, held_out.input, cfg.transfer);
  rep.steps = cfg.distill_steps;
  for (auto& p : student.named_parameters()) p.value().set_requires_grad(was[p.key()]);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace seqlab
