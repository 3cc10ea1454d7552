// AI agents (data/ai-agents.txt): a declared bot naming one of their tokens is an AI agent.
// Asked only of UAs isbot already calls bots (the cached `declaredBot` trait), so a
// person's lookup never pays for it. Whether a crawler's, agent's or monitor's UA is really
// theirs (their published ranges) is src/signals/bot-services.ts.

/**
 * Names ai.robots.txt lists that are generic words or name something other than an AI
 * agent's UA, left out when an `ai-robots-json` source writes the list: words and names
 * that real apps and people carry (`Code` is VS Code's and other Electron apps' token,
 * `Cursor`, `Spider`, `Operator`, `Devin`, `opencode`, `newsai`), a company name in SDK UAs
 * (`OpenAI`), crawlers and tools counted as what they are (`Scrapy`, `facebookexternalhit`,
 * `Applebot`, the headless `Lightpanda`), tokens too short or of two words to match safely.
 */
export const AI_AGENT_EXCLUSIONS: ReadonlySet<string> = new Set([
  'Code', 'Cursor', 'Spider', 'Operator', 'Devin', 'LCC', 'OpenAI', 'Scrapy', 'facebookexternalhit', 'Applebot',
  'Lightpanda', 'newsai', 'opencode', 'Terra Cotta', 'Kangaroo Bot', 'Datenbank Crawler',
]);

/**
 * The AI-agent list file from ai.robots.txt's robots.json (an object keyed by agent name):
 * its names, a trailing version dropped (`iaskspider/2.0`, `Brightbot 1.0`), without
 * AI_AGENT_EXCLUSIONS, each once (any case). Throws when the body is not that JSON or
 * names no agent.
 */
export function aiAgentsFromRobotsJson(body: string, source: string): { text: string; count: number } {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (e) {
    throw new Error(`${source}: not JSON (${(e as Error).message.slice(0, 120)})`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`${source}: not an object keyed by agent name (ai.robots.txt's robots.json)`);
  const seen = new Set<string>();
  const names: string[] = [];
  for (const key of Object.keys(doc)) {
    if (AI_AGENT_EXCLUSIONS.has(key)) continue;
    const name = key.replace(/[/ ][\d.]+$/, '').trim();
    if (AI_AGENT_EXCLUSIONS.has(name) || !TOKEN.test(name) || seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    names.push(name);
  }
  if (names.length === 0) throw new Error(`${source}: names no agent`);
  const text = `# AI agents from ${source} (ai.robots.txt, MIT licence: https://github.com/ai-robots-txt/ai.robots.txt), generic words left out; written by ivtd data update\n${names.join('\n')}\n`;
  AiAgentList.parse(text, source);
  return { text, count: names.length };
}

const MAX_TOKENS = 10_000;
const TOKEN = /^[A-Za-z0-9][A-Za-z0-9 ._-]{1,63}$/;

/** The AI-agent tokens of one list file, as one case-insensitive whole-word matcher. */
export class AiAgentList {
  private constructor(
    private readonly re: RegExp | null,
    readonly size: number,
  ) {}

  static readonly EMPTY = new AiAgentList(null, 0);

  /** One token per line, `#` comments; a line that is not a token is an error naming it. */
  static parse(text: string, source: string): AiAgentList {
    const tokens: string[] = [];
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!.replace(/#.*/, '').trim();
      if (line === '') continue;
      if (!TOKEN.test(line)) throw new Error(`${source}:${i + 1}: "${line.slice(0, 80)}" is not an agent token (letters, digits, space, dot, _ or -; 2 to 64 characters)`);
      tokens.push(line.replace(/[.]/g, '\\.'));
      if (tokens.length > MAX_TOKENS) throw new Error(`${source}: more than ${MAX_TOKENS} tokens`);
    }
    if (tokens.length === 0) return AiAgentList.EMPTY;
    // Longest first, so `Claude-SearchBot` is not read as `Claude`; bounded by anything but a letter, digit or -.
    tokens.sort((a, b) => b.length - a.length);
    return new AiAgentList(new RegExp(`(?<![A-Za-z0-9-])(?:${tokens.join('|')})(?![A-Za-z0-9-])`, 'i'), tokens.length);
  }

  /** The agent token `ua` names, or '' (explain). */
  match(ua: string): string {
    return this.re?.exec(ua)?.[0] ?? '';
  }

  test(ua: string): boolean {
    return this.re !== null && this.re.test(ua);
  }
}
