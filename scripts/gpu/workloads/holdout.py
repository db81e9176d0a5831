"""Held-out jobs: run with the corpus but never used to tune gpumon's alert rules; scored at the end
to check the rules on jobs they were not fitted to.

modes:
  qwen-accum     a Qwen2-style decoder fine-tuned with gradient accumulation and variable lengths:
                 healthy.
  eval-graph     BERT evaluated without torch.no_grad(), summing the losses as tensors: every step's
                 autograd graph stays alive until the cap (CAP_GIB, 8) -> OOM after about 40 s.
  long-context   GPT-2 generation of one ever longer context (its KV cache grows token by token)
                 under a CAP_GIB (6) cap -> OOM.
  jax-ondemand   JAX without preallocation, a flax MLP trained at variable batch sizes: healthy.
Run for RUN_S seconds (default 20)."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wl  # noqa: E402

mode = sys.argv[1]
run_s = wl.env_f("RUN_S", 20)
wl.emit(ev="start", mode=mode, pid=os.getpid())

if mode == "jax-ondemand":
    import jax
    import jax.numpy as jnp
    import flax.linen as nn
    import optax
    j = wl.Jax()

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(3):
                x = nn.gelu(nn.Dense(2048)(x))
            return nn.Dense(10)(x)

    model, key = MLP(), jax.random.PRNGKey(0)
    params = model.init(key, jnp.zeros((1, 512)))
    tx = optax.sgd(1e-3)
    opt_state = tx.init(params)

    @jax.jit
    def step(params, opt_state, x):
        loss, g = jax.value_and_grad(lambda p: jnp.mean(model.apply(p, x) ** 2))(params)
        u, opt_state = tx.update(g, opt_state, params)
        return optax.apply_updates(params, u), opt_state, loss

    rnd = random.Random(5)
    for i in wl.run_for(run_s):
        b = rnd.choice([256, 512, 1024, 2048, 4096])
        params, opt_state, loss = step(params, opt_state, jax.random.normal(key, (b, 512)))
        loss.block_until_ready()
        j.step(i, batch=b)
    wl.emit(ev="end", pid=os.getpid())
    sys.exit(0)

import torch  # noqa: E402
dev = torch.device("cuda")
t = wl.Torch()
torch.manual_seed(0)
try:
    if mode == "qwen-accum":
        from transformers import Qwen2Config, Qwen2ForCausalLM
        cfg = Qwen2Config(hidden_size=768, intermediate_size=2048, num_hidden_layers=6,
                          num_attention_heads=12, num_key_value_heads=4, vocab_size=32000,
                          max_position_embeddings=1024)
        model = Qwen2ForCausalLM(cfg).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        rnd = random.Random(7)
        for i in wl.run_for(run_s):
            for _ in range(4):
                ids = torch.randint(0, cfg.vocab_size, (8, rnd.randint(128, 768)), device=dev)
                (model(input_ids=ids, labels=ids).loss / 4).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            t.step(i)
    elif mode == "eval-graph":
        from transformers import BertConfig, BertForMaskedLM
        t.cap(wl.env_f("CAP_GIB", 8))
        model = BertForMaskedLM(BertConfig()).to(dev)
        model.eval()
        total, period, last = 0.0, None, time.time()
        for i in range(100000):
            ids = torch.randint(1000, 30000, (4, 128), device=dev)
            total = total + model(input_ids=ids, labels=ids).loss  # the bug: no no_grad, no .item()
            torch.cuda.synchronize()
            t.step(i)
            a = t.figures()["allocated"]
            if i == 1:
                first = a
            if i == 2:
                per_step = max(1, a - first)
                period = wl.env_f("BUILD_S", 40) / max(1.0, (t.limit - a) / per_step)
            if period:
                time.sleep(max(0.0, period - (time.time() - last)))
            last = time.time()
    elif mode == "long-context":
        from transformers import GPT2Config, GPT2LMHeadModel
        t.cap(wl.env_f("CAP_GIB", 6))
        model = GPT2LMHeadModel(GPT2Config(n_layer=12, n_positions=8192)).to(dev).eval()
        with torch.no_grad():
            out = model(input_ids=torch.randint(0, 50257, (16, 64), device=dev), use_cache=True)
            past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
            for i in range(8000):
                out = model(input_ids=tok, past_key_values=past, use_cache=True)
                past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
                if i % 50 == 0:
                    torch.cuda.synchronize()
                    t.step(i, tokens=64 + i)
                time.sleep(wl.env_f("TOKEN_S", 0.004))
    else:
        sys.exit(f"unknown mode {mode}")
except torch.OutOfMemoryError as e:
    t.oom(e)
wl.emit(ev="end", pid=os.getpid())
