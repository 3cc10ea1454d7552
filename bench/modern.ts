// "Modern" for bench/detect.ts: the UA names an OS or browser released in 2019 or later
// (Android >= 10, iOS/iPadOS >= 13, Tizen >= 5, webOS with Chrome >= 68, Roku OS >= 9,
// Fire OS on Android >= 9, PlayStation 5, Xbox One/Series, Windows NT 10, macOS 10.15+,
// ChromeOS) and no browser older than Chrome 77, Firefox 68 or Safari 13 when one is named.

const num = (re: RegExp, ua: string) => {
  const m = re.exec(ua);
  return m ? Number(m[1]) : NaN;
};

/** See the header: an OS or browser of 2019 or later, and no older browser named. */
export function isModern(ua: string): boolean {
  const chrome = num(/(?:Chrome|CriOS)\/(\d+)/, ua);
  const firefox = num(/(?:Firefox|FxiOS)\/(\d+)/, ua);
  const safari = /Safari\//.test(ua) && !/Chrome|Chromium|CriOS|Android/.test(ua) ? num(/Version\/(\d+)/, ua) : NaN;
  if (chrome < 77 && !/Web0S|webOS|Tizen/.test(ua)) return false; // TV platforms ship old engines: judged by OS below
  if (firefox < 68 || safari < 13) return false;
  const android = num(/Android (\d+)/, ua);
  if (/AFT\w/.test(ua)) return android >= 9;
  if (!Number.isNaN(android)) return android >= 10;
  const ios = num(/(?:iPhone|CPU|iPad)(?: iPhone)? OS (\d+)[_.]/, ua);
  if (!Number.isNaN(ios)) return ios >= 13;
  if (/Tizen/.test(ua)) return num(/Tizen (\d+)/, ua) >= 5;
  if (/Web0S|webOS/.test(ua)) return chrome >= 68;
  if (/Roku/.test(ua)) return num(/Roku\/DVP-(\d+)/, ua) >= 9;
  if (/PlayStation 5|Xbox One|Xbox Series/.test(ua)) return true;
  if (/Windows NT 10/.test(ua)) return true;
  if (/Mac OS X 10[._]15|Mac OS X 1[1-9]/.test(ua)) return true;
  if (/CrOS/.test(ua)) return true;
  return false;
}
