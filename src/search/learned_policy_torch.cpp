// The learned policy on libtorch (compiled when CMake finds the Torch package: KFORGE_WITH_TORCH;
// learned_policy_none.cpp otherwise). The only file of kforge that includes torch's headers.
#include <torch/nn.h>
#include <torch/optim/adam.h>
#include <torch/serialize.h>

#include <filesystem>
#include <random>
#include <set>

#include "ir/error.h"
#include "search/learned_policy.h"

namespace kforge {

namespace {

torch::nn::Sequential mlp(int64_t in, int64_t hidden) {
  return torch::nn::Sequential(torch::nn::Linear(in, hidden), torch::nn::Tanh(), torch::nn::Linear(hidden, hidden),
                               torch::nn::Tanh(), torch::nn::Linear(hidden, 1));
}

// The sampling generator: SplitMix64, whose whole state is one integer, so a checkpoint stores it as a JSON
// number. (std::mt19937_64's state goes through iostreams; inside PyTorch's process on the GPU machine that
// crashed in the locale code of libstdc++ on save.)
struct SplitMix64 {
  using result_type = uint64_t;
  uint64_t state;
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return ~uint64_t(0); }
  uint64_t operator()() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

torch::Tensor matrix(const std::vector<FeatureRow>& rows) {
  int64_t n = int64_t(rows.size()), f = n ? int64_t(rows[0].size()) : 0;
  torch::Tensor t = torch::empty({n, f});
  float* p = t.data_ptr<float>();
  for (auto& r : rows) {
    KF_ASSERT(int64_t(r.size()) == f, "feature rows of different lengths");
    p = std::copy(r.begin(), r.end(), p);
  }
  return t;
}

}  // namespace

nlohmann::json UpdateStats::to_json() const {
  return {{"policy_loss", policy_loss}, {"value_loss", value_loss}, {"entropy", entropy},
          {"mean_reward", mean_reward}, {"approx_kl", approx_kl}, {"episodes", episodes}};
}

struct LearnedPolicy::Impl {
  PolicyOptions opts;
  mutable torch::nn::Sequential actor{nullptr}, critic{nullptr};  // forward() is not const in libtorch
  std::unique_ptr<torch::optim::Adam> optimizer;
  SplitMix64 rng;
  int64_t step = 0;
  nlohmann::json progress = nlohmann::json::object();

  explicit Impl(const PolicyOptions& o) : opts(o), rng{o.seed} {
    torch::manual_seed(o.seed);
    actor = mlp(int64_t(decision_feature_names().size()), o.hidden);
    critic = mlp(int64_t(task_feature_count()), o.hidden);
    std::vector<torch::Tensor> params = actor->parameters();
    for (auto& p : critic->parameters()) params.push_back(p);
    optimizer = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(o.learning_rate));
  }

  torch::Tensor log_probs(const std::vector<FeatureRow>& rows) const {
    return torch::log_softmax(actor->forward(matrix(rows)).squeeze(-1), 0);
  }

  // Per episode: the sum of its chosen candidates' log-probabilities and the mean entropy of its decisions. All
  // candidate rows go through the actor in one batch; the softmax is then taken per decision.
  std::pair<torch::Tensor, torch::Tensor> evaluate(const std::vector<Episode>& episodes) const {
    std::vector<FeatureRow> rows;
    for (auto& e : episodes)
      for (auto& d : e.decisions) rows.insert(rows.end(), d.rows.begin(), d.rows.end());
    torch::Tensor logits = actor->forward(matrix(rows)).squeeze(-1);
    std::vector<torch::Tensor> lps, ents;
    int64_t at = 0;
    for (auto& e : episodes) {
      torch::Tensor lp = torch::zeros({}), ent = torch::zeros({});
      for (auto& d : e.decisions) {
        torch::Tensor l = torch::log_softmax(logits.narrow(0, at, int64_t(d.rows.size())), 0);
        at += int64_t(d.rows.size());
        lp = lp + l[d.chosen];
        ent = ent - (l.exp() * l).sum();
      }
      lps.push_back(lp);
      ents.push_back(ent / double(std::max<size_t>(1, e.decisions.size())));
    }
    return {torch::stack(lps), torch::stack(ents)};
  }

  torch::Tensor values(const std::vector<Episode>& episodes) const {
    std::vector<FeatureRow> rows;
    for (auto& e : episodes) rows.push_back(e.task);
    return critic->forward(matrix(rows)).squeeze(-1);
  }

  static torch::Tensor rewards(const std::vector<Episode>& episodes) {
    std::vector<float> r;
    for (auto& e : episodes) r.push_back(float(e.reward));
    return torch::tensor(r);
  }

  void apply(const torch::Tensor& loss) {
    optimizer->zero_grad();
    loss.backward();
    optimizer->step();
  }
};

LearnedPolicy::LearnedPolicy(const PolicyOptions& opts) : impl_(std::make_unique<Impl>(opts)) {}
LearnedPolicy::~LearnedPolicy() = default;

Episode LearnedPolicy::sample(const GraphAnalysis& analysis, const GpuInfo& gpu, bool greedy, double explore) {
  KF_ASSERT(explore >= 0 && explore <= 1, "exploration probability outside [0, 1]");
  torch::NoGradGuard no_grad;
  PlanDecisions d(analysis, gpu);
  Episode e;
  e.task = d.task_row();
  while (!d.done()) {
    torch::Tensor lp = impl_->log_probs(d.candidates());
    std::vector<double> p(size_t(lp.size(0)));
    for (size_t i = 0; i < p.size(); ++i) p[i] = std::exp(lp[int64_t(i)].item<double>());
    int k = greedy ? int(lp.argmax().item<int64_t>())
            : explore > 0 && std::bernoulli_distribution(explore)(impl_->rng)
                ? std::uniform_int_distribution<int>(0, int(p.size()) - 1)(impl_->rng)
                : std::discrete_distribution<int>(p.begin(), p.end())(impl_->rng);
    e.log_prob += lp[k].item<double>();
    d.choose(k);
  }
  e.decisions = d.decisions();
  e.schedule = d.schedule();
  return e;
}

std::vector<Schedule> LearnedPolicy::propose(const GraphAnalysis& analysis, const GpuInfo& gpu, int count) {
  std::vector<Schedule> out;
  std::set<std::string> seen;
  for (int attempt = 0; int(out.size()) < count && attempt < 20 * count + 20; ++attempt) {
    Schedule s = sample(analysis, gpu, attempt == 0, attempt % 2 == 0 ? kProposalExploration : 0.0).schedule;
    if (seen.insert(to_json(s).dump()).second) out.push_back(s);
  }
  return out;
}

Episode LearnedPolicy::replay(const GraphAnalysis& analysis, const GpuInfo& gpu, const Schedule& s) {
  torch::NoGradGuard no_grad;
  PlanDecisions d(analysis, gpu);
  Episode e;
  e.task = d.task_row();
  while (!d.done()) {
    int k = d.index_of(s);
    if (k < 0) throw UserError("schedule " + to_json(s).dump() + " is outside the policy's action space");
    e.log_prob += impl_->log_probs(d.candidates())[k].item<double>();
    d.choose(k);
  }
  e.decisions = d.decisions();
  e.schedule = d.schedule();
  return e;
}

std::vector<double> LearnedPolicy::probabilities(const Decision& d) const {
  torch::NoGradGuard no_grad;
  torch::Tensor p = impl_->log_probs(d.rows).exp();
  return std::vector<double>(p.data_ptr<float>(), p.data_ptr<float>() + p.numel());
}

double LearnedPolicy::value(const FeatureRow& task) const {
  torch::NoGradGuard no_grad;
  return impl_->critic->forward(matrix({task})).item<double>();
}

UpdateStats LearnedPolicy::update(const std::vector<Episode>& episodes) {
  if (episodes.empty()) throw UserError("policy update: no episodes");
  UpdateStats s;
  s.episodes = int(episodes.size());
  torch::Tensor reward = Impl::rewards(episodes);
  std::vector<double> old;
  for (auto& e : episodes) old.push_back(e.log_prob);
  torch::Tensor old_lp = torch::tensor(old, torch::kFloat);
  torch::Tensor adv;
  {
    torch::NoGradGuard no_grad;
    adv = reward - impl_->values(episodes);
    // Normalised advantages keep the step size independent of the reward's scale and the critic's lag. A batch
    // whose episodes all earned the same reward holds no preference: its advantages are zero. (Dividing by
    // std + 1e-6 there turned the float rounding of adv - mean, ~1e-7, into advantages of ~0.1 to 1 with one
    // arbitrary sign for every episode: an update that pushed all the sampled, equally good, plans up or down.)
    if (episodes.size() > 1) {
      double sd = adv.std().item<double>(), scale = std::max(1.0, adv.abs().max().item<double>());
      adv = sd > 1e-5 * scale ? (adv - adv.mean()) / sd : torch::zeros_like(adv);
    }
  }
  for (int epoch = 0; epoch < impl_->opts.epochs; ++epoch) {
    auto [lp, ent] = impl_->evaluate(episodes);
    torch::Tensor ratio = (lp - old_lp).exp();
    double c = impl_->opts.clip;
    torch::Tensor policy_loss = -torch::min(ratio * adv, ratio.clamp(1 - c, 1 + c) * adv).mean();
    torch::Tensor value_loss = (impl_->values(episodes) - reward).pow(2).mean();
    impl_->apply(policy_loss + impl_->opts.value_weight * value_loss - impl_->opts.entropy_bonus * ent.mean());
    s.policy_loss = policy_loss.item<double>();
    s.value_loss = value_loss.item<double>();
    s.entropy = ent.mean().item<double>();
    s.approx_kl = (old_lp - lp).mean().item<double>();
  }
  s.mean_reward = reward.mean().item<double>();
  ++impl_->step;
  return s;
}

UpdateStats LearnedPolicy::imitate(const std::vector<Episode>& episodes, int epochs) {
  if (episodes.empty()) throw UserError("behaviour cloning: no episodes");
  UpdateStats s;
  s.episodes = int(episodes.size());
  torch::Tensor reward = Impl::rewards(episodes);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    auto [lps, ents] = impl_->evaluate(episodes);
    torch::Tensor nll = -lps.mean(), ent = ents.mean();
    torch::Tensor value_loss = (impl_->values(episodes) - reward).pow(2).mean();
    impl_->apply(nll + impl_->opts.value_weight * value_loss);
    s.policy_loss = nll.item<double>();
    s.value_loss = value_loss.item<double>();
    s.entropy = ent.item<double>();
  }
  s.mean_reward = reward.mean().item<double>();
  ++impl_->step;
  return s;
}

int64_t LearnedPolicy::step() const { return impl_->step; }
nlohmann::json& LearnedPolicy::progress() { return impl_->progress; }

void LearnedPolicy::save(const std::string& path) const {
  torch::serialize::OutputArchive root, actor, critic, optimizer;
  impl_->actor->save(actor);
  impl_->critic->save(critic);
  impl_->optimizer->save(optimizer);
  root.write("actor", actor);
  root.write("critic", critic);
  root.write("optimizer", optimizer);
  nlohmann::json meta = checkpoint_schema();
  meta.update({{"step", impl_->step}, {"progress", impl_->progress}, {"rng", impl_->rng.state},
               {"options", {{"hidden", impl_->opts.hidden}, {"learning_rate", impl_->opts.learning_rate},
                            {"clip", impl_->opts.clip}, {"entropy_bonus", impl_->opts.entropy_bonus},
                            {"value_weight", impl_->opts.value_weight}, {"epochs", impl_->opts.epochs},
                            {"seed", impl_->opts.seed}}}});
  root.write("meta", c10::IValue(meta.dump()));
  namespace fs = std::filesystem;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path());
  std::string tmp = path + ".tmp";  // write-then-rename: an interrupted save never leaves half a checkpoint
  root.save_to(tmp);
  fs::rename(tmp, path);
}

std::unique_ptr<LearnedPolicy> LearnedPolicy::load(const std::string& path, const PolicyOptions& opts) {
  torch::serialize::InputArchive root;
  nlohmann::json meta;
  try {
    root.load_from(path);
    c10::IValue m;
    root.read("meta", m);
    meta = nlohmann::json::parse(m.toStringRef());
  } catch (const std::exception& e) {
    throw UserError("cannot read policy checkpoint " + path + ": " + std::string(e.what()).substr(0, 300));
  }
  check_checkpoint_schema(meta, path);
  PolicyOptions o = opts;
  auto saved = meta["options"];
  o.hidden = saved.value("hidden", o.hidden);
  o.seed = saved.value("seed", o.seed);
  auto p = std::make_unique<LearnedPolicy>(o);
  torch::serialize::InputArchive actor, critic, optimizer;
  root.read("actor", actor);
  root.read("critic", critic);
  root.read("optimizer", optimizer);
  p->impl_->actor->load(actor);
  p->impl_->critic->load(critic);
  p->impl_->optimizer->load(optimizer);
  p->impl_->step = meta.value("step", int64_t(0));
  p->impl_->progress = meta.value("progress", nlohmann::json::object());
  // Checkpoints from before SplitMix64 stored a text state: those restart the generator from the seed.
  if (meta.contains("rng") && meta["rng"].is_number_unsigned()) p->impl_->rng.state = meta["rng"].get<uint64_t>();
  return p;
}

bool learned_policy_available() { return true; }

}  // namespace kforge
