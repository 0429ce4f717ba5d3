// Drives `llmcapd sim` with the official `openai` npm client (see sim_openai_client_test.sh):
// what the simulator honours as vLLM does (stop strings and stop_reason, n choices, logprobs in
// vLLM's shapes, streamed and not, per-request seed) and what it refuses with vLLM's 400
// (tool_choice "auto", logprobs above 20, best_of > n); completions echo; GET /version.
// Usage: node sim_openai_client_test.mjs LLMCAPD OPENAI_PREFIX
import assert from 'node:assert/strict';
import {spawn} from 'node:child_process';
import {createRequire} from 'node:module';
import path from 'node:path';

const [llmcapd, prefix] = process.argv.slice(2);
const require = createRequire(path.join(prefix, 'node_modules', 'x.js'));
const OpenAI = require('openai');

function startSim() {
  const sim = spawn(llmcapd, ['sim', '--port', '0', '--time-scale', '50', '--log-level', 'warn'],
                    {stdio: ['ignore', 'pipe', 'inherit']});
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error('no address printed: ' + seen)), 15000);
    sim.stdout.on('data', (d) => {
      seen += d;
      const m = /listening on (http:\/\/[^\s]+)/.exec(seen);
      if (m) {
        clearTimeout(timer);
        resolve({sim, base: m[1]});
      }
    });
    sim.on('exit', (code) => reject(new Error(`llmcapd sim exited ${code}: ${seen}`)));
  });
}

const {sim, base} = await startSim();
const client = new OpenAI({baseURL: base + '/v1', apiKey: 'unused', maxRetries: 0});
const model = (await client.models.list()).data[0].id;
const messages = [{role: 'user', content: 'Tell me something long.'}];
let passed = 0;

async function check(name, body) {
  try {
    await body();
    passed += 1;
    console.log(`ok - ${name}`);
  } catch (e) {
    console.log(`not ok - ${name}`);
    sim.kill();
    throw e;
  }
}

async function refused(call, param) {
  try {
    await call();
  } catch (e) {
    assert.equal(e.status, 400, String(e));
    assert.equal(e.param, param, e.message);  // vLLM's body: {"error": {message, type, param}}
    assert.equal(e.type, 'BadRequestError', e.message);
    return e;
  }
  assert.fail('the request was not refused');
}

// The text and logprobs per choice index of a stream, and the chunk count.
async function collect(stream, chat) {
  const out = {};
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      const o = (out[c.index] ??= {text: '', tokens: [], finish: null, stop_reason: null});
      o.text += chat ? (c.delta.content ?? '') : c.text;
      if (c.logprobs) {
        if (chat) {
          for (const t of c.logprobs.content) o.tokens.push(t);
        } else {
          o.tokens.push(...c.logprobs.tokens);
        }
      }
      if (c.finish_reason) {
        o.finish = c.finish_reason;
        o.stop_reason = c.stop_reason;
      }
    }
  }
  return {out, usage};
}

await check('GET /version', async () => {
  const r = await fetch(base + '/version');
  assert.equal(r.status, 200);
  const v = await r.json();
  assert.match(v.version, /^\d+\.\d+\.\d+/);
});

await check('chat stop string: text ends before it, finish_reason stop, fewer tokens', async () => {
  const r = await client.chat.completions.create(
      {model, messages, max_tokens: 300, stop: ['.'], seed: 4});
  const c = r.choices[0];
  assert.equal(c.finish_reason, 'stop');
  assert.equal(c.stop_reason, '.');
  assert.ok(!c.message.content.includes('.'), c.message.content);
  assert.ok(c.message.content.length > 0);
  assert.ok(r.usage.completion_tokens < 300, JSON.stringify(r.usage));
  const again = await client.chat.completions.create(
      {model, messages, max_tokens: 300, stop: ['.'], seed: 4});
  assert.equal(again.choices[0].message.content, c.message.content);  // same seed, same text
});

// vllm:generation_tokens_total from /metrics: the tokens the simulated engine generated.
async function generatedTokens() {
  const text = await (await fetch(base + '/metrics')).text();
  const m = /^vllm:generation_tokens_total\{[^}]*\} (\S+)$/m.exec(text);
  assert.ok(m, 'no vllm:generation_tokens_total in /metrics');
  return Number(m[1]);
}

await check('a stop frees the sequence: the engine generates only the tokens up to it',
            async () => {
  const before = await generatedTokens();
  const r = await client.completions.create(
      {model, prompt: 'a b c', max_tokens: 500, n: 3, stop: ['.'], seed: 77});
  const after = await generatedTokens();
  assert.ok(r.usage.completion_tokens < 3 * 500, JSON.stringify(r.usage));
  assert.equal(after - before, r.usage.completion_tokens);
  for (const c of r.choices) assert.equal(c.finish_reason, 'stop');
});

await check('chat n=2: two independent choices, usage counts both', async () => {
  const r = await client.chat.completions.create({model, messages, max_tokens: 12, n: 2});
  assert.equal(r.choices.length, 2);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  assert.notEqual(r.choices[0].message.content, r.choices[1].message.content);
  for (const c of r.choices) assert.equal(c.finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 24);
});

await check('chat stream n=2 with logprobs, top_logprobs and stop "\\n"', async () => {
  const body = {model, messages, max_tokens: 400, n: 2, stop: '\n', logprobs: true,
                top_logprobs: 3, seed: 9};
  const whole = await client.chat.completions.create(body);
  const {out, usage} = await collect(await client.chat.completions.create(
      {...body, stream: true, stream_options: {include_usage: true}}), true);
  let tokens = 0;
  for (const i of [0, 1]) {
    const w = whole.choices[i];
    assert.equal(out[i].text, w.message.content);
    assert.equal(out[i].finish, w.finish_reason);
    assert.equal(out[i].stop_reason, w.stop_reason);
    assert.ok(!w.message.content.includes('\n'));
    assert.equal(out[i].tokens.length, w.logprobs.content.length);
    for (const t of w.logprobs.content) {
      assert.ok(t.logprob <= 0);
      assert.deepEqual(t.bytes, [...Buffer.from(t.token, 'utf8')]);
      assert.equal(t.top_logprobs.length, 3);
      assert.equal(t.top_logprobs[0].token, t.token);
    }
    tokens += w.logprobs.content.length;
    // The streamed logprobs are the same tokens; their text, stop string cut, is the content.
    assert.deepEqual(out[i].tokens.map((t) => t.token), w.logprobs.content.map((t) => t.token));
    assert.ok(out[i].tokens.map((t) => t.token).join('').startsWith(w.message.content));
  }
  assert.equal(usage.completion_tokens, tokens);
  assert.equal(whole.usage.completion_tokens, tokens);
});

await check('completions logprobs and stop, streamed and not, n=2', async () => {
  const body = {model, prompt: 'Once upon a time', max_tokens: 200, n: 2, logprobs: 2,
                stop: ['\n', ','], seed: 21};
  const whole = await client.completions.create(body);
  assert.equal(whole.choices.length, 2);
  const {out} = await collect(await client.completions.create({...body, stream: true}), false);
  for (const c of whole.choices) {
    const lp = c.logprobs;
    assert.equal(lp.tokens.length, lp.token_logprobs.length);
    assert.equal(lp.tokens.length, lp.top_logprobs.length);
    assert.equal(lp.tokens.length, lp.text_offset.length);
    assert.equal(lp.text_offset[0], 0);
    for (const [i, d] of lp.top_logprobs.entries()) {
      assert.equal(Object.keys(d).length, 2);
      assert.equal(d[lp.tokens[i]], lp.token_logprobs[i]);
      assert.ok(lp.token_logprobs[i] <= 0);
    }
    assert.equal(c.finish_reason, 'stop');
    assert.ok([',', '\n'].includes(c.stop_reason), String(c.stop_reason));
    assert.equal(out[c.index].text, c.text);
    assert.equal(out[c.index].finish, 'stop');
    assert.deepEqual(out[c.index].tokens, lp.tokens);
  }
});

await check('completions echo: the prompt before the text, streamed and not', async () => {
  const body = {model, prompt: 'Say this', max_tokens: 5, echo: true, seed: 2};
  const whole = await client.completions.create(body);
  assert.ok(whole.choices[0].text.startsWith('Say this '), whole.choices[0].text);
  const {out} = await collect(await client.completions.create({...body, stream: true}), false);
  assert.equal(out[0].text, whole.choices[0].text);
  await refused(() => client.completions.create({...body, logprobs: 1}), 'echo');
});

await check('logprobs out of range and best_of > n are refused naming the field', async () => {
  await refused(() => client.completions.create({model, prompt: 'x', logprobs: 21}), 'logprobs');
  await refused(() => client.chat.completions.create(
      {model, messages, logprobs: true, top_logprobs: 21}), 'top_logprobs');
  await refused(() => client.completions.create({model, prompt: 'x', n: 2, best_of: 3}),
                'best_of');
});

const tools = [{type: 'function', function: {name: 'get_weather', description: 'weather',
                parameters: {type: 'object', properties: {city: {type: 'string'}}}}}];
await check('tools: tool_choice auto (or absent) refused with vLLM\'s 400, none served',
            async () => {
  const e = await refused(() => client.chat.completions.create(
      {model, messages, tools, tool_choice: 'auto'}), 'tool_choice');
  assert.match(e.message, /--enable-auto-tool-choice/);
  await refused(() => client.chat.completions.create({model, messages, tools}), 'tool_choice');
  await refused(() => client.chat.completions.create(
      {model, messages, tools, tool_choice: 'required'}), 'tool_choice');
  const r = await client.chat.completions.create(
      {model, messages, tools, tool_choice: 'none', max_tokens: 4});
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.ok(r.usage.prompt_tokens > 8, JSON.stringify(r.usage));  // the tools are in the prompt
});

sim.kill();
console.log(`sim_openai_client_test: ${passed} checks passed`);
