import { readFileSync } from 'node:fs';
import t from 'tap';
import { AI_AGENT_EXCLUSIONS, AiAgentList, aiAgentsFromRobotsJson } from '../../src/signals/crawlers.ts';
import { bundleForm, bundleProblem } from '../../src/signals/app-bundle.ts';
import { UaAnalyzer } from '../../src/signals/ua-analysis.ts';
import { NO_HISTORY } from '../../src/signals/history.ts';
import { categoryOf, noBidReason } from '../../src/signals/category.ts';
import { classifyTransaction, score, type ScoreInputs } from '../../src/signals/score.ts';

const data = (f: string) => readFileSync(new URL(`../../data/${f}`, import.meta.url), 'utf8');
const analyzer = new UaAnalyzer({ now: Date.UTC(2026, 10, 1) });

function inputs(over: Partial<ScoreInputs>): ScoreInputs {
  return {
    ipBogon: false, uaMalformed: false, ifaMalformed: false, ifaKnownBad: false, deviceImpossible: false, declaredBot: false,
    aiAgent: false, monitor: false, crawlerSpoofed: false, automation: false, ipHosting: false, ipVpn: false, ipProxy: false, ipTor: false,
    ipRelay: false, uaInconsistent: false, suaMismatch: false, ifaTypeMismatch: false, ssaiSpoof: false, geoMismatch: false, schainPresent: false, schainValid: false,
    schainVerified: false, schainComplete: false, sellerUnauthorized: false, appBundleMalformed: false, zeroIfa: false,
    history: NO_HISTORY, ...over,
  };
}

t.test('the AI-agent list: whole tokens, any case, longest first; a bad line names itself', async (t) => {
  const list = AiAgentList.parse('# comment\nGPTBot  # OpenAI\nClaude\nClaude-SearchBot\nbigsur.ai\n', 'test.txt');
  t.equal(list.size, 4);
  t.equal(list.match('Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)'), 'GPTBot');
  t.equal(list.match('Mozilla/5.0 (compatible; Claude-SearchBot/1.0)'), 'Claude-SearchBot', 'the longer token wins');
  t.equal(list.match('gptbot/1.0'), 'gptbot', 'any case');
  t.notOk(list.test('Mozilla/5.0 (compatible; NotGPTBotAtAll/1.0)'), 'not inside another word');
  t.notOk(list.test('bigsurXai/1.0'), 'a dot is a dot');
  t.notOk(AiAgentList.EMPTY.test('GPTBot/1.0'));
  t.throws(() => AiAgentList.parse('GPTBot\n(.*)\n', 'list.txt'), /list\.txt:2: "\(\.\*\)" is not an agent token/);
});

t.test('the embedded AI-agent list: the agents the issue names, none of the generic words', async (t) => {
  const list = AiAgentList.parse(data('ai-agents.txt'), 'data/ai-agents.txt');
  t.ok(list.size > 30, `${list.size} tokens`);
  for (const ua of [
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.3; +https://openai.com/gptbot)',
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ChatGPT-User/1.0; +https://openai.com/bot)',
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)',
    'Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)',
    'Mozilla/5.0 (compatible; Bytespider; spider-feedback@bytedance.com)',
    'CCBot/2.0 (https://commoncrawl.org/faq/)',
  ]) t.ok(list.test(ua), ua);
  // Generic words (in ai.robots.txt's list, which a source can fetch) must not turn real apps into agents.
  for (const ua of [
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Code/1.99.0 Chrome/132.0.0.0 Electron/34.0.0 Safari/537.36',
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Cursor/0.50.0 Chrome/132.0.0.0 Electron/34.0.0 Safari/537.36',
    'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  ]) t.notOk(list.test(ua), ua);
});

t.test('AI agents, impersonators and declared crawlers score as their own reasons', async (t) => {
  const agent = score(inputs({ aiAgent: true }));
  t.equal(agent.band, 'high');
  t.equal(agent.leading, 'ua_ai_agent');
  t.equal(categoryOf(false, agent.leading), 'ai_agent');
  t.equal(classifyTransaction(agent), 'givt');
  t.equal(noBidReason(false, agent.leading), 3, 'a known spider');
  const spoofed = score(inputs({ crawlerSpoofed: true }));
  t.equal(spoofed.band, 'high');
  t.equal(spoofed.leading, 'ua_crawler_spoofed');
  t.equal(classifyTransaction(spoofed), 'sivt', 'a bot masquerading is SIVT');
  t.equal(categoryOf(false, spoofed.leading), 'device_spoofing');
  const monitor = score(inputs({ monitor: true }));
  t.equal(monitor.band, 'high');
  t.equal(monitor.leading, 'ua_monitor');
  t.equal(categoryOf(false, monitor.leading), 'monitoring', 'an uptime monitor has its own category');
  t.equal(classifyTransaction(monitor), 'givt', 'known, declared, not a person: GIVT');
  t.equal(noBidReason(false, monitor.leading), 3);
  // Googlebot, isbot's verdict kept: a declared bot either way, which the lookup splits by address.
  t.ok(analyzer.analyze('Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)').declaredBot);
});

t.test('app bundle IDs against the store of the OS the UA names', async (t) => {
  t.equal(bundleForm('com.example.app'), 'rdns');
  t.equal(bundleForm('id1234567890'), 'numeric');
  t.equal(bundleForm('B00EXAMPLE'), 'asin');
  t.equal(bundleForm('G15000000001'), 'samsung');
  t.equal(bundleForm('my app'), 'other');
  const android = 'Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/UQ1A.240105.004; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.230 Mobile Safari/537.36';
  const fireTv = 'Mozilla/5.0 (Linux; Android 9; AFTMM Build/PS7233; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.230 Mobile Safari/537.36';
  const roku = 'Roku/DVP-12.5 (12.5.0.4178-51)';
  const iphone = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148';
  const os = (ua: string) => analyzer.analyze(ua).os;
  const cases: Array<[string, string, string]> = [
    ['com.example.game', android, ''],
    ['123456', android, 'numeric_on_android'],
    ['B00EXAMPLE', android, 'asin_on_android'],
    ['B00EXAMPLE', fireTv, ''],
    ['com.example.tv', fireTv, ''],
    ['151908', roku, ''],
    ['com.example.channel', roku, 'rdns_on_roku'],
    ['B00EXAMPLE', roku, 'asin_on_roku'],
    ['id987654321', iphone, ''],
    ['com.example.ios', iphone, ''],
    ['G15000000001', iphone, 'samsung_on_ios'],
    ['not a bundle', iphone, 'unknown_form_on_ios'],
  ];
  for (const [app, ua, want] of cases) t.equal(bundleProblem(app, os(ua), ua), want, `${app} on ${os(ua)}`);
  t.equal(bundleProblem('anything at all', 'windows', 'Mozilla/5.0 (Windows NT 10.0; Win64; x64)'), '', 'a desktop has no store to ask');
  t.equal(bundleProblem('', 'android', android), '', 'no app, nothing to check');
  const weak = score(inputs({ appBundleMalformed: true }));
  t.equal(weak.band, 'low', 'weak alone');
  t.same(weak.reasons, ['app_bundle_malformed']);
  t.equal(categoryOf(false, 'app_bundle_malformed'), 'supply_chain');
});

t.test("the AI-agent list from ai.robots.txt's robots.json: names, versions dropped, generic words left out", async (t) => {
  // Invented entries in robots.json's form.
  const body = JSON.stringify({
    ExampleAIBot: { operator: 'Example' }, 'Examplebot-User/2.0': {}, 'Other Agent 1.0': {}, Code: {}, Spider: {}, exampleaibot: {}, 'bad<token>': {},
  });
  const { text, count } = aiAgentsFromRobotsJson(body, 'https://ai-robots.example/robots.json');
  t.equal(count, 3);
  const list = AiAgentList.parse(text, 'ai-agents.txt');
  t.ok(list.test('Mozilla/5.0 (compatible; ExampleAIBot/1.0)'));
  t.ok(list.test('Examplebot-User/3.1'), 'the version dropped');
  t.ok(list.test('Other Agent/1.0'));
  t.notOk(list.test('Mozilla/5.0 (X11; Linux x86_64) Code/1.99.0'), 'generic words left out');
  t.match(text, /MIT licence/);
  t.throws(() => aiAgentsFromRobotsJson('[1, 2]', 'x'), /not an object keyed by agent name/);
  t.throws(() => aiAgentsFromRobotsJson('<html>', 'x'), /not JSON/);
  t.throws(() => aiAgentsFromRobotsJson('{"Code": {}}', 'x'), /names no agent/);
  // The embedded list holds none of the words left out.
  const embedded = AiAgentList.parse(data('ai-agents.txt'), 'data/ai-agents.txt');
  for (const w of AI_AGENT_EXCLUSIONS) t.notOk(embedded.test(`Mozilla/5.0 (compatible) ${w}/1.0`), `${w} is no agent`);
});
