import t from 'tap';
import { uaConsistency } from '../../src/signals/device-consistency.ts';
import { UaAnalyzer, UA_MAX_LENGTH, emptyVerdict, type UaInfo, type UaVerdict } from '../../src/signals/ua-analysis.ts';
import { UaCache, hashUa, normalizeUa } from '../../src/signals/ua-cache.ts';
import { HASH, hashString } from '../../src/memory/hash.ts';
import { DAY_MS, HOUR_MS } from '../../src/base/time.ts';

// Fixed clock so the version ceilings (Chrome ~170, Safari/iOS 28 in late 2026) are stable.
const NOW = Date.UTC(2026, 10, 21);
const analyzer = new UaAnalyzer({ now: NOW });

const UA = {
  chromeWin:
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  safariMac:
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
  firefoxWin: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0',
  firefoxLinux: 'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
  edgeWin:
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.67',
  chromebook:
    'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  safariIphone:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 Mobile/15E148 Safari/604.1',
  safariIpad:
    'Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1',
  iosWebview:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
  chromeAndroid:
    'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.82 Mobile Safari/537.36',
  androidWebview:
    'Mozilla/5.0 (Linux; Android 13; SM-S918B Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/123.0.6312.118 Mobile Safari/537.36',
  samsungTablet:
    'Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  samsungInternet:
    'Mozilla/5.0 (Linux; Android 10; SM-G973F) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36',
  roku: 'Roku/DVP-12.5 (12.5.0.4178-88)',
  // Hand-written: an Android TV whose WebView says Mobile (its model names the screen size),
  // a no-name Android box without Mobile, a Tizen TV without SMART-TV, an Android handheld console.
  androidTvWebview:
    'Mozilla/5.0 (Linux; Android 12; 43QX8800 Build/SP1A.210812.016; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/118.0.5993.80 Mobile Safari/537.36',
  androidBox:
    'Mozilla/5.0 (Linux; Android 11; Q9 Ultra Box) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/110.0.5481.65 Safari/537.36',
  androidBoxNoName:
    'Mozilla/5.0 (Linux; Android 10; ZX-800) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/101.0.4951.61 Safari/537.36',
  tizenPlain:
    'Mozilla/5.0 (Linux; Tizen 7.0) AppleWebKit/537.36 (KHTML, like Gecko) Version/7.0 Chrome/94.0.4606.31 Safari/537.36',
  // Hand-written: an Android TV WebView named only by its Android TV build (xTT), a no-name
  // box WebView whose model ends in BOX, a Google TV (isbot's "google" rule), a phone UA cut
  // short after the Chrome version (no Safari/: not evidence of a tablet), Facebook's app on
  // Windows (ua-parser calls it a phone), Office for Mac and a Mac app over CFNetwork on x86.
  androidTvBuild:
    'Mozilla/5.0 (Linux; Android 12; QX3 Build/STTE.231115.002; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.43 Mobile Safari/537.36',
  boxWebview:
    'Mozilla/5.0 (Linux; Android 11; HOMEBOX-7 Build/RP1A.201005.006; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/116.0.5845.92 Mobile Safari/537.36',
  googleTv:
    'Mozilla/5.0 (Linux; Android 12; Acme Google TV 4K Build/STT2.230301.004; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/121.0.6167.101 Mobile Safari/537.36',
  phoneTruncated:
    'Mozilla/5.0 (Linux; Android 12; XY-2210 Build/SP1A.210812.016; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/99.0.4844.58',
  // Hand-written: WebViews (every Android WebView says Mobile) of a model no maker's phone
  // naming covers — a box or an unknown phone, unknown either way; the same WebView inside a
  // phone-only app (Instagram's own UA tail); an OPPO phone by its CPH code; a Huawei phone by
  // its model code and a Huawei screen whose build names the maker but whose model is no
  // phone code.
  unnamedWebview:
    'Mozilla/5.0 (Linux; Android 12; KX-90 Build/SP1A.210812.016; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.43 Mobile Safari/537.36',
  unnamedWebviewInstagram:
    'Mozilla/5.0 (Linux; Android 12; KX-90 Build/SP1A.210812.016; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.43 Mobile Safari/537.36 Instagram 300.0.0.1.100 Android (31/12; 400dpi; 1080x2340; Acme; KX-90; kx90; mt6765; en_US; 500000000)',
  oppoWebview:
    'Mozilla/5.0 (Linux; Android 14; CPH2601 Build/UP1A.231005.007; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/125.0.6422.53 Mobile Safari/537.36',
  huaweiPhoneWebview:
    'Mozilla/5.0 (Linux; Android 12; ABC-LX9 Build/HUAWEIABC-LX9; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/114.0.5735.196 Mobile Safari/537.36',
  huaweiScreenWebview:
    'Mozilla/5.0 (Linux; Android 10; ABCD-550 Build/HUAWEIABCD-550; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/88.0.4324.93 Mobile Safari/537.36',
  // Hand-written: WebViews named by a Japanese carrier's model code (docomo, SoftBank, au),
  // Opera for Android in its WebView form, an unnamed WebView on Android 6 (phones' only,
  // measured: docs/scoring.md), UC Browser's and Opera Mini's own UA forms, and Opera's TV SDK
  // (OMI/) in an Android box, which is no phone.
  docomoWebview:
    'Mozilla/5.0 (Linux; Android 13; F-51B Build/V41RD41B; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.43 Mobile Safari/537.36',
  softbankWebview:
    'Mozilla/5.0 (Linux; Android 12; A103SH Build/S1234; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/118.0.5993.80 Mobile Safari/537.36',
  auWebview:
    'Mozilla/5.0 (Linux; Android 13; KYG01 Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/121.0.6167.101 Mobile Safari/537.36',
  operaAndroidWebview:
    'Mozilla/5.0 (Linux; Android 13; KX-90 Build/TP1A.220624.014; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/124.0.6367.82 Mobile Safari/537.36 OPR/81.1.4292.78446',
  unnamedWebviewAndroid6:
    'Mozilla/5.0 (Linux; Android 6.0; KX-50 Build/MRA58K; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/70.0.3538.110 Mobile Safari/537.36',
  ucBrowserOwn: 'UCWEB/2.0 (MIDP-2.0; U; Adr 9; en-US; KX-90) U2/1.0.0 UCBrowser/12.10.0.1163 U2/1.0.0 Mobile',
  operaMiniProxy: 'UCWEB/2.0 (Linux; U; Opera Mini/7.1.32052/30.3697; en-US; KX-90) U2/1.0.0 UCBrowser/9.9.0.543 Mobile',
  operaTvBox:
    'Mozilla/5.0 (Linux; Android 9; KX-92 Build/PPR1.180610.011; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/87.0.4280.66 Mobile Safari/537.36 OPR/46.0.2207.0 OMI/4.20.0.87.Acme.1',
  // Hand-written: Yandex's app in its large-screen build (`/apad`, which tablets, TVs and
  // boxes run) on an unnamed Android device, the same app's phone build, and the large-screen
  // build on a Galaxy phone (a foldable runs it) that its model names.
  yandexLargeScreen:
    'Mozilla/5.0 (Linux; arm; Android 11; KX-77) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/110.0.5481.100 YaApp_Android/23.17/apad YaSearchBrowser/23.17/apad BroPP/1.0 SA/3 Mobile Safari/537.36',
  yandexPhoneBuild:
    'Mozilla/5.0 (Linux; arm; Android 11; KX-77) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/110.0.5481.100 YaApp_Android/23.17 YaSearchBrowser/23.17 BroPP/1.0 SA/3 Mobile Safari/537.36',
  yandexLargeScreenGalaxy:
    'Mozilla/5.0 (Linux; arm_64; Android 13; SM-F936B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/116.0.5845.114 YaSearchBrowser/23.81/apad BroPP/1.0 YaSearchApp/23.81/apad webOmni SA/3 Mobile Safari/537.36',
  fbWindows:
    'Mozilla/5.0 (Windows NT 10.0.19045.100; osmeta 10.3.4000) AppleWebKit/602.1.1 (KHTML, like Gecko) Version/9.0 Safari/602.1.1 osmeta/10.3.4000 Build/4000 [FBAN/FBW;FBAV/200.0.0.10.100;]',
  officeMac: 'Microsoft Office Word/16.80.1 (Mac OS/14.1; Desktop; en-US; NonAppStore; Apple/Mac14,2)',
  macCfnetwork: 'Reader/310 CFNetwork/1410.0.3 Darwin/22.6.0 (x86_64)',
  // Android apps on Chromebooks (a ChromeOS build; the machine's name with Mobile) and an
  // upper-case GOOGLE TV (isbot's generic "google" rule).
  androidOnChromebook:
    'Mozilla/5.0 (Linux; Android 11; Acme Chromebook 14 Build/R118-15604.57.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/118.0.5993.111 Mobile Safari/537.36',
  androidX86:
    'Mozilla/5.0 (Linux; x86_64; Android 11; Acme Laptop 5) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/114.0.0.0 Safari/537.36',
  youtubeApp: 'com.google.android.youtube/19.10.35(Linux; U; Android 14; en_US; AB-12 Build/UP1A.231005.007) gzip',
  googleTvUpper:
    'Mozilla/5.0 (Linux; Android 11; ACME GOOGLE TV 4K Build/RTT2.230601.005; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/126.0.6478.134 Mobile Safari/537.36',
  handheldConsole:
    'Mozilla/5.0 (Linux; Android 13; Retroid Pocket 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36',
  tizen:
    'Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) 76.0.3809.146/6.0 TV Safari/537.36',
  webos:
    'Mozilla/5.0 (Web0S; Linux/SmartTV) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.79 Safari/537.36 WebAppManager',
  fireTv:
    'Mozilla/5.0 (Linux; Android 9; AFTMM Build/PS7233; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/99.0.4844.88 Mobile Safari/537.36',
  fireTvDalvik: 'Dalvik/2.1.0 (Linux; U; Android 9; AFTSSS Build/PS7633.3445N)',
  bravia:
    'Mozilla/5.0 (Linux; Android 9; BRAVIA 4K GB ATV3 Build/PTT1.190515.001.S52) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/87.0.4280.101 Mobile Safari/537.36',
  appleTv: 'AppleCoreMedia/1.0.0.20L563 (Apple TV; U; CPU OS 16_5 like Mac OS X; en_us)',
  chromecast:
    'Mozilla/5.0 (X11; Linux aarch64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/114.0.0.0 Safari/537.36 CrKey/1.56.500000',
  chromecastAndroid:
    'Mozilla/5.0 (Linux; Android 10; Chromecast) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/108.0.0.0 Mobile Safari/537.36',
  ps5: 'Mozilla/5.0 (PlayStation; PlayStation 5/2.26) AppleWebKit/605.1.15 (KHTML, like Gecko)',
  xbox:
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64; Xbox; Xbox One) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.102 Safari/537.36 Edge/18.19041',
  headless:
    'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.6367.60 Safari/537.36',
  phantom:
    'Mozilla/5.0 (Unknown; Linux x86_64) AppleWebKit/538.1 (KHTML, like Gecko) PhantomJS/2.1.1 Safari/538.1',
  lighthouse:
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Chrome-Lighthouse',
  electron:
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Slack/4.38.125 Chrome/120.0.6099.291 Electron/28.3.1 Safari/537.36',
  googlebot: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  googlebotSmartphone:
    'Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.201 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  bingbot: 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)',
  curl: 'curl/8.5.0',
  pythonRequests: 'python-requests/2.31.0',
  goHttp: 'Go-http-client/1.1',
  okhttp: 'okhttp/4.12.0',
  cfnetwork: 'Example%20News/5.2.1 CFNetwork/1410.0.3 Darwin/22.6.0',
} as const;

type Expect = Partial<UaInfo>;
const cases: Array<[keyof typeof UA, Expect]> = [
  ['chromeWin', { os: 'windows', osVersion: '10', browser: 'chrome', browserVersion: '124.0.0.0', device: 'desktop', engine: 'blink', webview: false }],
  ['safariMac', { os: 'macos', osVersion: '10.15.7', browser: 'safari', browserVersion: '17.4', device: 'desktop', engine: 'webkit' }],
  ['firefoxWin', { os: 'windows', browser: 'firefox', browserVersion: '125.0', device: 'desktop', engine: 'gecko' }],
  ['firefoxLinux', { os: 'linux', browser: 'firefox', device: 'desktop' }],
  ['edgeWin', { os: 'windows', browser: 'edge', browserVersion: '124.0.2478.67', device: 'desktop' }],
  ['chromebook', { os: 'chromeos', browser: 'chrome', device: 'desktop' }],
  ['safariIphone', { os: 'ios', osVersion: '17.4.1', browser: 'safari', device: 'mobile', webview: false }],
  ['safariIpad', { os: 'ios', browser: 'safari', device: 'tablet' }],
  ['iosWebview', { os: 'ios', browser: 'webview', device: 'mobile', webview: true }],
  ['chromeAndroid', { os: 'android', osVersion: '14', browser: 'chrome', device: 'mobile', webview: false }],
  ['androidWebview', { os: 'android', browser: 'webview', device: 'mobile', webview: true }],
  ['samsungTablet', { os: 'android', browser: 'chrome', device: 'tablet' }],
  ['samsungInternet', { os: 'android', browser: 'samsung', browserVersion: '24.0', device: 'mobile' }],
  ['roku', { os: 'roku', osVersion: '12.5', browser: 'unknown', device: 'smarttv' }],
  ['tizen', { os: 'tizen', osVersion: '6.0', device: 'smarttv' }],
  ['webos', { os: 'webos', browser: 'chrome', device: 'smarttv' }],
  ['fireTv', { os: 'fireos', browser: 'webview', device: 'smarttv', webview: true }],
  ['fireTvDalvik', { os: 'fireos', device: 'smarttv', appClient: true, declaredBot: false, browser: 'app' }],
  ['bravia', { os: 'android', device: 'smarttv' }],
  ['appleTv', { os: 'tvos', device: 'smarttv', appClient: true }],
  ['chromecast', { os: 'chromecast', device: 'smarttv' }],
  ['chromecastAndroid', { os: 'android', device: 'smarttv' }], // ua-parser alone says mobile
  ['androidTvBuild', { os: 'android', device: 'smarttv', webview: true }],
  ['boxWebview', { os: 'android', device: 'smarttv', webview: true }],
  ['googleTv', { os: 'android', device: 'smarttv', declaredBot: false }],
  ['unnamedWebview', { os: 'android', device: 'unknown', webview: true }], // phone or box: the UA does not say
  ['unnamedWebviewInstagram', { os: 'android', device: 'mobile', webview: true }],
  ['oppoWebview', { os: 'android', device: 'mobile', webview: true }],
  ['huaweiPhoneWebview', { os: 'android', device: 'mobile', webview: true }],
  ['huaweiScreenWebview', { os: 'android', device: 'unknown', webview: true }],
  ['docomoWebview', { os: 'android', device: 'mobile', webview: true }],
  ['softbankWebview', { os: 'android', device: 'mobile', webview: true }],
  ['auWebview', { os: 'android', device: 'mobile', webview: true }],
  ['operaAndroidWebview', { os: 'android', device: 'mobile', webview: true }],
  ['unnamedWebviewAndroid6', { os: 'android', device: 'mobile', webview: true }],
  ['yandexLargeScreen', { os: 'android', device: 'unknown', webview: false }],
  ['yandexPhoneBuild', { os: 'android', device: 'mobile', webview: false }],
  ['yandexLargeScreenGalaxy', { os: 'android', device: 'mobile', webview: false }],
  ['ucBrowserOwn', { device: 'mobile' }],
  ['operaTvBox', { os: 'android', device: 'unknown', webview: true }],
  ['operaMiniProxy', { device: 'mobile' }],
  ['phoneTruncated', { os: 'android', device: 'unknown' }], // not a tablet: a phone the truncation hid
  ['officeMac', { device: 'desktop' }],
  ['androidOnChromebook', { os: 'android', device: 'desktop' }],
  ['androidX86', { os: 'android', device: 'desktop' }],
  ['googleTvUpper', { os: 'android', device: 'smarttv', declaredBot: false }],
  ['youtubeApp', { os: 'android', device: 'unknown', declaredBot: false }],
  ['macCfnetwork', { device: 'desktop', appClient: true }],
  ['ps5', { os: 'playstation', device: 'console' }],
  ['xbox', { os: 'xbox', browser: 'edge', device: 'console' }],
  ['headless', { automation: true, declaredBot: true, automationReason: 'headless_chrome', browser: 'headless', os: 'linux', device: 'desktop' }],
  ['phantom', { automation: true, declaredBot: true, automationReason: 'phantomjs', browser: 'phantomjs' }],
  ['lighthouse', { automation: true, declaredBot: true, automationReason: 'lighthouse', browser: 'chrome' }],
  ['electron', { automation: false, declaredBot: false, browser: 'electron', os: 'macos', device: 'desktop' }],
  ['googlebot', { declaredBot: true, automation: false, malformed: false, browser: 'bot', device: 'unknown' }],
  ['googlebotSmartphone', { declaredBot: true, malformed: false, browser: 'bot', os: 'android', device: 'mobile' }],
  ['bingbot', { declaredBot: true, malformed: false, browser: 'bot' }],
  ['curl', { declaredBot: true, malformed: false, browser: 'bot', os: 'unknown', device: 'unknown', engine: 'unknown' }],
  ['pythonRequests', { declaredBot: true, malformed: false, browser: 'bot' }],
  ['goHttp', { declaredBot: true, malformed: false, browser: 'bot' }],
  ['okhttp', { declaredBot: false, appClient: true, malformed: false, browser: 'app', device: 'unknown' }],
  ['cfnetwork', { declaredBot: false, appClient: true, malformed: false, os: 'ios' }],
];

t.test('real user agents parse into the expected families', async (t) => {
  for (const [key, expect] of cases) {
    const info = analyzer.analyze(UA[key]);
    t.match(info, expect, key);
    // Unless a case says otherwise: not malformed, not a bot, not automation.
    if (expect.malformed === undefined) t.equal(info.malformedReason, '', `${key} not malformed`);
    if (expect.declaredBot === undefined) t.equal(info.declaredBot, false, `${key} not a declared bot`);
    if (expect.automation === undefined) t.equal(info.automation, false, `${key} not automation`);
  }
});

t.test('malformed rules, each with its reason code', async (t) => {
  const malformed: Array<[string, string]> = [
    ['', 'empty'],
    ['   ', 'empty'],
    ['x'.repeat(UA_MAX_LENGTH + 1), 'too_long'],
    ['Mozilla/5.0 (Windows NT 10.0)\u0000 Chrome/124.0.0.0', 'control_char'],
    ['Mozilla/5.0 (Windows NT 10.0;\nWin64) Chrome/124.0.0.0', 'control_char'],
    ['Mozilla/5.0 (Windows NT 10.0; \uFFFD) Chrome/124.0.0.0 Safari/537.36', 'invalid_char'],
    ['Mozilla/5.0 (compatible)', 'placeholder'],
    ['Mozilla/5.0', 'placeholder'],
    ['null', 'placeholder'],
    ['undefined', 'placeholder'],
    ['{ua}', 'placeholder'],
    ['${USER_AGENT}', 'placeholder'],
    ['Mozilla/5.0 ${navigator.userAgent}', 'placeholder'],
    ['[UA]', 'placeholder'],
    ['%%USER_AGENT%%', 'placeholder'],
    ['{{device.ua}}', 'placeholder'],
    ['Opera/9', 'too_short'],
    ['Mozilla%2F5.0%20(Windows%20NT%2010.0%3B%20Win64%3B%20x64)', 'percent_encoded'],
    [`Mozilla/5.0 (Windows NT 10.0; Win64; x64) Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36`, 'duplicated_token'],
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/999.0.0.0 Safari/537.36', 'impossible_version'],
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/999.0.0.0 Safari/537.36 Edg/124.0.0.0', 'impossible_version'],
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:500.0) Gecko/20100101 Firefox/500.0', 'impossible_version'],
    ['Mozilla/5.0 (Windows NT 11.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36', 'impossible_version'],
    ['Mozilla/5.0 (iPhone; CPU iPhone OS 45_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/45.0 Mobile/15E148 Safari/604.1', 'impossible_version'],
    ['Mozilla/5.0 (Linux; Android 40; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36', 'impossible_version'],
    // Internet Explorers that never shipped: a version that never was, a newer MSIE than its
    // Trident, IE 6+ on a Mac, Mac-only IE 4.5 on Windows, "MSIE 11.0" without Trident, a Trident
    // major that never was.
    ['Mozilla/4.0 (compatible; MSIE 6.2; Windows NT 5.1)', 'impossible_version'],
    ['Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.1; Trident/5.0)', 'impossible_version'],
    ['Mozilla/5.0 (compatible; MSIE 9.0; Macintosh; Intel Mac OS X 10_8_2; Trident/5.0)', 'impossible_version'],
    ['Mozilla/4.0 (compatible; MSIE 4.5; Windows NT 5.0)', 'impossible_version'],
    ['Mozilla/5.0 (compatible; MSIE 11.0; Windows NT 6.1; WOW64)', 'impossible_version'],
    ['Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/12.0; rv:11.0) like Gecko', 'impossible_version'],
    ['Mozilla/5.0 (Frobnicator; Qux 3) Zork', 'unparseable'],
  ];
  for (const [ua, reason] of malformed) {
    const info = analyzer.analyze(ua);
    t.equal(info.malformed, true, `${JSON.stringify(ua.slice(0, 50))} malformed`);
    t.equal(info.malformedReason, reason, `${JSON.stringify(ua.slice(0, 50))} → ${reason}`);
  }
});

t.test('Internet Explorers that shipped stay valid', async (t) => {
  for (const ua of [
    'Mozilla/4.0 (compatible; MSIE 8.0; Windows NT 6.1; Trident/4.0; SLCC2)',
    'Mozilla/5.0 (Windows NT 6.3; WOW64; Trident/7.0; rv:11.0) like Gecko',
    'Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 10.0; WOW64; Trident/7.0; .NET4.0C)', // compatibility view
    'Mozilla/5.0 (compatible; MSIE 11.0; Windows NT 6.3; Trident/7.0)', // IE-based shells
    'Mozilla/4.0 (compatible; MSIE 7.0; Windows Phone OS 7.0; Trident/3.1; IEMobile/7.0; Acme; 7)',
    'Mozilla/4.0 (compatible; MSIE 5.23; Mac_PowerPC)',
    'Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)',
    'Mozilla/6.0 (compatible; MSIE 7.01; Amiga-AWeb)', // borrows the token, names no Windows
  ]) {
    t.notOk(analyzer.analyze(ua).malformed, ua);
  }
});

t.test('version ceilings follow the clock: Chrome 160 is plausible in 2026, not in 2023', async (t) => {
  const ua = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/160.0.0.0 Safari/537.36';
  t.equal(new UaAnalyzer({ now: NOW }).analyze(ua).malformed, false);
  t.equal(new UaAnalyzer({ now: Date.UTC(2023, 0, 1) }).analyze(ua).malformedReason, 'impossible_version');
});

t.test('analyze returns frozen answers; too long and empty UAs are judged without parsing', async (t) => {
  const first = analyzer.analyze(UA.chromeWin);
  t.ok(Object.isFrozen(first));
  t.same(analyzer.analyze((UA.chromeWin + ' ').trimEnd()), first, 'same content, same answer');
  t.match(analyzer.analyze('y'.repeat(UA_MAX_LENGTH + 5)), { malformed: true, malformedReason: 'too_long' });
  t.match(analyzer.analyze(''), { malformed: true, malformedReason: 'empty' });
  t.throws(() => {
    (first as { os: string }).os = 'hacked';
  }, 'frozen object rejects writes (strict mode)');
});

/** The fields of a full analysis the lookup path reads (the cached verdict has no version strings or engine). */
function verdictFields(i: UaInfo | UaVerdict) {
  return {
    malformed: i.malformed, malformedReason: i.malformedReason, declaredBot: i.declaredBot, automation: i.automation,
    automationReason: i.automationReason, appClient: i.appClient, os: i.os, browser: i.browser, device: i.device, webview: i.webview,
  };
}

/** Every UA in this file: the named ones, the malformed cases and some variants. */
function corpus(): string[] {
  const out = new Set<string>(Object.values(UA));
  for (const ua of Object.values(UA)) {
    out.add(ua.replace(/(\/\d+\.)(\d+)/g, (_m, a: string, b: string) => a + String((Number(b) + 7) % 1000)));
    out.add(ua + ' ExtraToken/1.2.3');
  }
  for (const extra of [
    'Mozilla/5.0 (Windows NT 11.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/999.0.0.0 Safari/537.36',
    'Mozilla/5.0 (Linux; Android 40; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
    'Mozilla/5.0 (Frobnicator; Qux 3) Zork', 'a/1.2.3.4', 'x/1.0', 'Mozilla/5.0', '${UA}', 'Opera/9.80 (Windows NT 6.1) Presto/2.12.388 Version/12.18',
    'Mozilla/5.0 (Linux; Android 13; SM-T870 Build/TP1A.220624.014) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.230 Safari/537.36',
    'Mozilla/5.0 (iPad; CPU OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0.6099.119 Mobile/15E148 Safari/604.1',
    'Mozilla/5.0 (Linux; Android 12; Nexus 7 Build/ABC.123) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/110.0.5481.65 Safari/537.36',
    'Mozilla/5.0 (Linux; Android 12; Nexus 5 Build/ABC.123) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/110.0.5481.65 Mobile Safari/537.36',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 OPR/106.0.0.0',
    'Mozilla/5.0 (Linux; U; Android 4.0.3; ko-kr; LG-L160L Build/IML74K) AppleWebkit/534.30 (KHTML, like Gecko) Version/4.0 Mobile Safari/534.30',
    'Mozilla/5.0 (Macintosh; U; PPC Mac OS X; en) AppleWebKit/419.3 (KHTML, like Gecko) Safari/419.3',
    'Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.2; Trident/6.0)',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/440.0.0.32.106;FBBV/123]',
    'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)',
  ]) out.add(extra);
  return [...out];
}

t.test('normalising version digits changes no verdict (the shared cache is keyed on it)', async (t) => {
  let normalised = 0;
  for (const ua of corpus()) {
    const n = normalizeUa(ua);
    if (n !== ua) normalised++;
    t.equal(n.length, ua.length, 'length kept');
    t.same(verdictFields(analyzer.analyze(n)), verdictFields(analyzer.analyze(ua)), JSON.stringify(ua.slice(0, 70)));
    hashUa(n, 1);
    const direct = [HASH[0], HASH[1]];
    hashUa(ua, 1);
    t.same([HASH[2], HASH[3]], direct, 'the one-pass hash of the normalised form equals hashing normalizeUa()');
    const exact = [HASH[0], HASH[1]];
    hashString(ua, 1);
    t.same([HASH[0], HASH[1]], exact, "the exact pair is the one mixer's hashString()");
  }
  t.ok(normalised > 40, `most UAs have version digits to normalise (${normalised})`);
  t.equal(normalizeUa('Chrome/142.0.7444.59 x'), 'Chrome/142.0.0000.00 x');
  t.equal(normalizeUa('Build/12.1.A.1.205)'), 'Build/12.1.A.1.205)', 'tokens with letters are left alone');
  t.equal(normalizeUa('Gecko/20100101 Firefox/125.0'), 'Gecko/20100101 Firefox/125.0');
});

t.test('the shared cache: one parse per normalised UA, verdicts equal to the full analysis', async (t) => {
  const cache = UaCache.create(64 << 10, new UaAnalyzer());
  const out = emptyVerdict();
  for (const ua of corpus()) {
    t.same(verdictFields(cache.verdict(ua, NOW, out)), verdictFields(analyzer.analyze(ua)), `miss: ${JSON.stringify(ua.slice(0, 60))}`);
    t.same(verdictFields(cache.verdict(ua, NOW, out)), verdictFields(analyzer.analyze(ua)), `hit: ${JSON.stringify(ua.slice(0, 60))}`);
  }
  const misses = cache.misses;
  cache.verdict(UA.chromeAndroid.replace('6367.82', '6367.91'), NOW, out);
  t.equal(cache.misses, misses, 'another build of the same Chrome is a hit');
  const before = cache.bytes;
  for (let k = 0; k < 20 * cache.capacity; k++) cache.verdict(`Mozilla/5.0 (X11; Linux x86_64) Test${k}/1.0`, NOW, out);
  t.ok(cache.count() <= cache.capacity, `at most ${cache.capacity} entries (${cache.count()})`);
  t.equal(cache.bytes, before, 'fixed size');
});

t.test('after a flood of one-off UAs, the UAs traffic repeats stay cached (they do not evict each other)', async (t) => {
  const cache = UaCache.create(64 << 10, new UaAnalyzer());
  const out = emptyVerdict();
  // Distinct after normalisation (letters, not digits, tell them apart).
  const word = (k: number, n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(97 + (Math.floor(k / 26 ** i) % 26))).join('');
  for (let k = 0; k < 3 * cache.capacity; k++) cache.verdict(`Mozilla/5.0 (X11; Linux x86_64) Junk${word(k, 5)}/1.0`, NOW, out);
  const live = Array.from({ length: Math.floor(cache.capacity / 4) }, (_, k) => `Mozilla/5.0 (Linux; Android 14; ${word(k, 4)}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36`);
  for (let pass = 0; pass < 6; pass++) for (const ua of live) cache.verdict(ua, NOW, out);
  const misses = cache.misses;
  for (let pass = 0; pass < 6; pass++) for (const ua of live) cache.verdict(ua, NOW, out);
  t.ok(cache.misses - misses < 0.02 * 6 * live.length, `${cache.misses - misses} misses in ${6 * live.length} lookups of ${live.length} repeated UAs (capacity ${cache.capacity})`);
});

t.test("the cache's per-thread memo of UA hashes gives hashUa's hashes, before and after it fills", async (t) => {
  const cache = UaCache.create(64 << 10, new UaAnalyzer()); // (its seed: 0x5eed)
  const out = emptyVerdict();
  const uas = Array.from({ length: 3000 }, (_, k) => `Mozilla/5.0 (X11; Linux x86_64) Memo${k}/${k % 7}.0 (like Gecko)`);
  let wrong = 0;
  let checked = 0;
  // Each UA, then ones seen shortly and long before (found in the memo, or not since it was
  // cleared), some as equal strings that are other objects.
  for (let k = 0; k < uas.length; k++) {
    for (const j of [k, k - 5, k - 600, k]) {
      if (j < 0) continue;
      const ua = j % 2 ? ` ${uas[j]!}`.slice(1) : uas[j]!;
      cache.verdict(ua, NOW, out);
      hashUa(ua, 0x5eed);
      checked++;
      if (cache.exactHi !== HASH[0] || cache.exactLo !== HASH[1]) wrong++;
    }
  }
  t.equal(checked, 3000 * 4 - 5 - 600);
  t.equal(wrong, 0, 'every exact hash as hashUa computes it');
  const once = 'Mozilla/5.0 (X11; Linux x86_64) SeenOnce/1.0';
  cache.verdict(once, NOW, out);
  t.equal(cache.remembered, false, 'a UA seen once is not remembered');
  cache.verdict(once, NOW, out);
  t.equal(cache.remembered, true, 'seen twice, it is');
  cache.verdict(once, NOW, out);
  t.equal(cache.remembered, true, 'and found');
  cache.verdict(UA.chromeWin, NOW, out);
  cache.verdict(UA.safariMac, NOW, out);
  const safari = [cache.exactHi, cache.exactLo];
  cache.verdict(UA.chromeWin, NOW, out);
  t.not(cache.exactLo, safari[1], 'distinct UAs keep distinct hashes');
});

t.test('hashes handed over by the query pass are taken for an equal UA, once, and never for another', async (t) => {
  const cache = UaCache.create(64 << 10, new UaAnalyzer()); // (its seed: 0x5eed)
  const out = emptyVerdict();
  const ua = 'Mozilla/5.0 (X11; Linux x86_64) Handed/1.0';
  // Words no hash of ua gives, so the test sees which were used.
  const words = new Uint32Array([0x1234567, 0x89abcde, 0x2468ace, 0x13579bd]);
  cache.presetHashes(ua, words);
  cache.verdict(` ${ua}`.slice(1), NOW, out);
  t.same([cache.exactHi, cache.exactLo], [words[0], words[1]], 'an equal string (another object) takes them');
  cache.verdict(ua, NOW, out);
  hashUa(ua, 0x5eed);
  t.same([cache.exactHi, cache.exactLo], [HASH[0], HASH[1]], 'good for one verdict: the next hashes the UA');
  cache.presetHashes(ua, words);
  const other = 'Mozilla/5.0 (X11; Linux x86_64) Other/1.0';
  cache.verdict(other, NOW, out);
  hashUa(other, 0x5eed);
  t.same([cache.exactHi, cache.exactLo], [HASH[0], HASH[1]], 'another UA hashes itself');
  cache.verdict(ua, NOW, out);
  hashUa(ua, 0x5eed);
  t.same([cache.exactHi, cache.exactLo], [HASH[0], HASH[1]], 'and the words handed over are gone after it');
});

t.test('hashes stay right while the memo rests and after it probes again (no entry twice)', async (t) => {
  const cache = UaCache.create(64 << 10, new UaAnalyzer());
  const out = emptyVerdict();
  const hot = Array.from({ length: 40 }, (_, k) => `Mozilla/5.0 (X11; Linux x86_64) Hot${k}/1.0 (like Gecko)`);
  let wrong = 0;
  let remembered = 0;
  // Mostly one-off UAs (the memo finds too few and rests), with hot ones between them, then
  // only hot ones (it probes again): every exact hash must be hashUa's.
  for (let i = 0; i < 60_000; i++) {
    const ua = i < 40_000 && i % 5 !== 0 ? `Mozilla/5.0 (X11; Linux x86_64) Once${i}/1.0` : hot[i % hot.length]!;
    cache.verdict(ua, NOW, out);
    if (i >= 50_000 && cache.remembered) remembered++;
    hashUa(ua, 0x5eed);
    if (cache.exactHi !== HASH[0] || cache.exactLo !== HASH[1]) wrong++;
  }
  t.equal(wrong, 0, 'every exact hash as hashUa computes it');
  t.ok(remembered > 9_000, `the hot UAs are found in the memo again (${remembered} of the last 10 000)`);
});

t.test('a clock a year ahead: version ceilings follow the lookup, not the start', async (t) => {
  // Chrome 175 is ahead of the ceiling in November 2026 and current a year later.
  const ua = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/175.0.0.0 Safari/537.36';
  const cache = UaCache.create(64 << 10, new UaAnalyzer({ now: NOW }));
  const out = emptyVerdict();
  t.equal(cache.verdict(ua, NOW, out).malformedReason, 'impossible_version', 'too new today');
  const later = NOW + 365 * DAY_MS;
  t.equal(cache.verdict(ua, later, out).malformed, false, 'the same process a year later accepts it');
  t.equal(cache.verdict(UA.chromeWin, later, out).malformed, false, 'and still accepts older browsers');
  const a = new UaAnalyzer();
  t.equal(a.analyze(ua, NOW).malformedReason, 'impossible_version');
  t.equal(a.analyze(ua, later).malformed, false, 'analyze judges at the time it is given');
});

t.test('cached verdicts expire after a day', async (t) => {
  const cache = UaCache.create(64 << 10, new UaAnalyzer());
  const out = emptyVerdict();
  const t0 = Date.now();
  cache.verdict(UA.safariMac, t0, out);
  cache.verdict(UA.safariMac, t0 + 23 * HOUR_MS, out);
  t.equal(cache.misses, 1, 'within a day: one examination');
  cache.verdict(UA.safariMac, t0 + 25 * HOUR_MS, out);
  t.equal(cache.misses, 2, 'after a day: examined again');
});

t.test('uaConsistency against dvt, app and ifa', async (t) => {
  const IFA = '6d92078a-8246-4ba4-ae5b-76104861e7dc';
  const rows: Array<[keyof typeof UA, number, string | undefined, string | undefined, boolean, string]> = [
    // PC
    ['chromeWin', 2, undefined, undefined, true, ''],
    ['safariIphone', 2, undefined, undefined, false, 'dvt2_mobile_ua'],
    ['safariIpad', 2, undefined, undefined, false, 'dvt2_tablet_ua'],
    ['roku', 2, undefined, undefined, false, 'dvt2_smarttv_ua'],
    ['chromeWin', 2, undefined, IFA, false, 'ifa_on_desktop'],
    ['chromeWin', 2, 'com.example.app', undefined, false, 'app_on_desktop_browser'],
    ['electron', 2, 'com.example.desktop', undefined, true, ''],
    // phone
    ['chromeAndroid', 4, undefined, undefined, true, ''],
    ['androidWebview', 4, 'com.example.news', IFA, true, ''],
    ['chromeWin', 4, undefined, undefined, false, 'dvt4_desktop_ua'],
    ['fbWindows', 4, 'com.facebook.katana', undefined, false, 'dvt4_desktop_ua'], // "Windows NT" is never a phone
    ['phoneTruncated', 4, 'com.example.news', IFA, true, ''],
    ['chromebook', 4, undefined, undefined, false, 'dvt4_desktop_ua'],
    ['safariMac', 4, undefined, undefined, true, ''], // iPhone "request desktop website"
    ['roku', 4, 'com.example.app', IFA, false, 'dvt4_smarttv_ua'],
    // An Android browser without Mobile names a tablet, TV or box, never a phone.
    ['samsungTablet', 4, undefined, undefined, false, 'dvt4_tablet_ua'],
    ['androidBoxNoName', 4, 'com.example.app', IFA, false, 'dvt4_tablet_ua'],
    ['androidBox', 4, 'com.example.app', IFA, false, 'dvt4_smarttv_ua'],
    ['androidTvWebview', 4, 'com.example.app', IFA, false, 'dvt4_smarttv_ua'],
    ['tizenPlain', 4, 'com.example.app', IFA, false, 'dvt4_smarttv_ua'],
    // tablet and legacy mobile/tablet
    ['safariIpad', 5, undefined, undefined, true, ''],
    ['safariMac', 5, undefined, undefined, true, ''], // iPadOS Safari says Macintosh
    ['chromeWin', 5, undefined, undefined, true, ''], // Surface
    ['ps5', 5, undefined, undefined, false, 'dvt5_console_ua'],
    ['safariIphone', 1, undefined, undefined, true, ''],
    ['tizen', 1, undefined, undefined, false, 'dvt1_smarttv_ua'],
    // CTV, connected device, set-top box
    ['roku', 3, '12345', IFA, true, ''],
    ['tizen', 3, 'G15147002586', IFA, true, ''],
    ['webos', 3, 'com.example.tv', IFA, true, ''],
    ['fireTv', 3, 'com.example.firetv', IFA, true, ''],
    ['fireTvDalvik', 6, 'com.example.firetv', IFA, true, ''],
    ['bravia', 3, 'com.example.tv', IFA, true, ''],
    ['appleTv', 3, 'id1234567890', IFA, true, ''],
    ['chromecast', 6, 'com.example.cast', IFA, true, ''],
    ['xbox', 6, undefined, undefined, true, ''],
    ['chromeWin', 3, undefined, undefined, false, 'dvt3_desktop_ua'],
    ['safariMac', 7, undefined, undefined, false, 'dvt7_desktop_ua'],
    ['firefoxLinux', 3, undefined, undefined, true, ''], // some TVs send generic X11 Linux
    // A phone (Mobile with no TV model, build or platform; iPhone) declared as CTV, its
    // in-app WebViews included; TVs and boxes the model, build or platform names pass (their
    // WebViews say Mobile too).
    ['chromeAndroid', 3, 'com.example.tv', IFA, false, 'dvt3_mobile_ua'],
    ['samsungInternet', 7, 'com.example.tv', IFA, false, 'dvt7_mobile_ua'],
    ['safariIphone', 6, 'com.example.tv', IFA, false, 'dvt6_mobile_ua'],
    ['androidWebview', 3, 'com.example.tv', IFA, false, 'dvt3_mobile_ua'],
    ['iosWebview', 7, 'com.example.tv', IFA, false, 'dvt7_mobile_ua'],
    // A WebView names a phone only by its maker's model naming or a phone-only app around it;
    // an unnamed WebView is let through as CTV and as a phone alike (docs/scoring.md).
    ['oppoWebview', 3, 'com.example.tv', IFA, false, 'dvt3_mobile_ua'],
    ['huaweiPhoneWebview', 7, 'com.example.tv', IFA, false, 'dvt7_mobile_ua'],
    ['unnamedWebviewInstagram', 3, 'com.example.tv', IFA, false, 'dvt3_mobile_ua'],
    ['unnamedWebview', 3, 'com.example.tv', IFA, true, ''],
    ['unnamedWebview', 4, 'com.example.app', IFA, true, ''],
    ['unnamedWebview', 2, undefined, undefined, false, 'dvt2_unknown_ua'],
    ['huaweiScreenWebview', 3, 'com.example.tv', IFA, true, ''],
    ['docomoWebview', 3, 'com.example.tv', IFA, false, 'dvt3_mobile_ua'],
    ['softbankWebview', 7, 'com.example.tv', IFA, false, 'dvt7_mobile_ua'],
    ['auWebview', 6, 'com.example.tv', IFA, false, 'dvt6_mobile_ua'],
    ['operaAndroidWebview', 3, 'com.example.tv', IFA, false, 'dvt3_mobile_ua'],
    ['unnamedWebviewAndroid6', 3, 'com.example.tv', IFA, false, 'dvt3_mobile_ua'],
    ['unnamedWebviewAndroid6', 4, 'com.example.app', IFA, true, ''],
    ['ucBrowserOwn', 3, 'com.example.tv', IFA, false, 'dvt3_mobile_ua'],
    ['operaMiniProxy', 2, undefined, undefined, false, 'dvt2_mobile_ua'],
    ['ucBrowserOwn', 4, undefined, undefined, true, ''],
    ['operaTvBox', 3, 'com.example.tv', IFA, true, ''],
    // Yandex's large-screen build says Mobile on tablets, TVs and boxes: unknown unless the
    // model names a phone; its phone build's Mobile names a phone.
    ['yandexLargeScreen', 3, 'com.example.tv', IFA, true, ''],
    ['yandexLargeScreen', 4, 'com.example.app', IFA, true, ''],
    ['yandexLargeScreen', 5, 'com.example.app', IFA, true, ''],
    ['yandexPhoneBuild', 3, 'com.example.tv', IFA, false, 'dvt3_mobile_ua'],
    ['yandexLargeScreenGalaxy', 3, 'com.example.tv', IFA, false, 'dvt3_mobile_ua'],
    ['yandexLargeScreenGalaxy', 4, 'com.example.app', IFA, true, ''],
    ['androidTvBuild', 3, 'com.example.tv', IFA, true, ''],
    ['boxWebview', 7, 'com.example.tv', IFA, true, ''],
    ['googleTv', 3, 'com.example.tv', IFA, true, ''],
    ['androidTvBuild', 4, 'com.example.tv', IFA, false, 'dvt4_smarttv_ua'],
    ['googleTv', 4, 'com.example.tv', IFA, false, 'dvt4_smarttv_ua'],
    ['officeMac', 3, 'com.microsoft.word', IFA, false, 'ifa_on_desktop'],
    // Android apps on a Chromebook declared as a PC pass; as CTV they do not.
    ['androidOnChromebook', 2, undefined, undefined, true, ''],
    ['androidX86', 2, undefined, undefined, true, ''],
    // An Android app's own UA names no device class, but Android is no PC's OS.
    ['youtubeApp', 2, undefined, undefined, false, 'dvt2_unknown_ua'],
    ['youtubeApp', 4, 'com.google.android.youtube', IFA, true, ''],
    ['androidOnChromebook', 3, 'com.example.tv', IFA, false, 'ifa_on_desktop'],
    ['androidTvWebview', 3, 'com.example.tv', IFA, true, ''],
    ['androidBox', 3, 'com.example.tv', IFA, true, ''],
    ['androidBoxNoName', 7, 'com.example.tv', IFA, true, ''],
    ['tizenPlain', 3, 'com.example.tv', IFA, true, ''],
    ['handheldConsole', 6, 'com.example.game', IFA, true, ''],
    ['chromeWin', 7, 'com.example.tv', IFA, false, 'dvt7_desktop_ua'],
    // app clients need an app
    ['okhttp', 4, undefined, undefined, false, 'app_client_without_app'],
    ['okhttp', 4, 'com.example.app', IFA, true, ''],
    ['fireTvDalvik', 3, undefined, IFA, false, 'app_client_without_app'],
    // DOOH and unknowns are left alone
    ['chromeWin', 8, undefined, undefined, true, ''],
    ['chromeAndroid', 8, undefined, undefined, true, ''],
    ['curl', 2, undefined, undefined, true, ''],
    ['curl', 4, 'com.example.app', IFA, true, ''],
    ['chromeWin', 0, undefined, undefined, true, ''],
  ];
  for (const [key, dvt, app, ifa, consistent, reason] of rows) {
    const r = uaConsistency(analyzer.analyze(UA[key]), dvt, app, ifa);
    t.same(r, { consistent, reason }, `${key} dvt=${dvt} app=${app ?? '-'} ifa=${ifa ? 'yes' : '-'}`);
  }
});


// Invented TV and set-top UAs in the forms their platforms send (models and versions made up).
const TV_UAS = {
  hbbtvOpera: 'Opera/9.80 (Linux mips; U; HbbTV/1.2.1 (; Examplebox; HD9000; 2.1.0; 1.0;); ce-html/1.0; en) Presto/2.12.407 Version/12.50',
  nettv: 'Opera/9.80 (Linux i686; U; HbbTV/1.1.1 (; EXAMPLEVISION; Z5; ; ; ) CE-HTML/1.0 NETTV/1.0; en) Presto/2.10.287 Version/12.00',
  freesat: 'Opera/9.80 (Linux mips; HbbTV/1.2.1 (; freesat/1.0; box42; 1.0.0; 1.0.0; wired); ce-html/1.0) Presto/2.12.407 Version/12.50',
  vidaa: 'Mozilla/5.0 (Linux armv7l) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/88.0.4324.93 Safari/537.36 OPR/46.0.2207.0 OMI/4.22.0.11.Catcher5.12 Model/Hisense-MT9999 VIDAA/6.0(EXAMPLE;SmartTV;VS0000XX1;MTK9999/V0000.01.00A.A0101;UHD)',
  fireTvApp: 'Amazon;AFTZZ;0123456789abcdef0123456789abcdef;;tpapi;3.210.100',
  fireTvAppShort: 'Amazon;AFTXY042;fedcba9876543210fedcba9876543210;;tpapi',
  fireTvSmarttv: 'smarttv_AFTQQ_Build_1234567890_Chromium_100.0.4896.1',
  rokuPipes: 'RokuOS/4.0.0|Roku 9999X|STB|RokuOS 12.5.0 4100',
  rokuApp: 'RokuOS/12.0.0.4182, Exampleplayer/2.3.2024010100, Roku',
  vestel: 'Mozilla/5.0 (Linux ) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/108.0.5359.128 Safari/537.36 OPR/46.0.2207.0 OMI/4.23.2.96.LIMA2.100 Model/Vestel-MB999 VSTVB MB100 TiVoOS/1.0.0 (Vestel MB999 EXAMPLE) SmartTvA/3.0.0',
  cableBox: 'Mozilla/5.0 (Linux armv7l) AppleWebKit/602.1.28+ (KHTML, like Gecko) Version/9.1 Safari/601.5.17, ExampleCable_STB_01.2345.6789.10/BOX123 (Example,BOX123,Wired)',
  kepler: 'Kepler/1.1 (Linux; AFTXX001)',
  googleCube: 'Mozilla/5.0 (Linux GoogleTV 3.2 example_google_cube Build/MASTER) AppleWebKit/534.24 (KHTML, like Gecko) Chrome/11.0.696.77 Safari/534.24',
};

t.test('TV and set-top UAs isbot mistakes for bots are TVs, not declared bots', async (t) => {
  for (const [name, ua] of Object.entries(TV_UAS)) {
    const info = analyzer.analyze(ua);
    t.equal(info.declaredBot, false, `${name}: not a declared bot`);
    t.equal(info.malformed, false, `${name}: not malformed`);
    t.equal(info.device, 'smarttv', `${name}: a TV`);
    t.ok(uaConsistency(info, 3, 'com.example.tvapp', '6ba7b810-9dad-41d1-80b4-00c04fd430c8').consistent, `${name}: fits dvt 3 with an app and an IFA`);
  }
  // The tokens are judged out, nothing else: a bot carrying one is still a bot.
  for (const ua of [
    'Opera/9.80 (Linux mips; ce-html/1.0) Examplebot/2.1 (+https://bot.example/)',
    'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html) NETTV/4.0',
    'RokuOS/9.0.0, Examplebot/1.0, Roku',
    'curl/8.4.0 OMI/4.21.4.112.Catcher4.69',
  ]) t.equal(analyzer.analyze(ua).declaredBot, true, ua);
});

t.test('fixture placeholders are malformed, not declared bots', async (t) => {
  for (const ua of ['test-user-agent', 'iPad', 'iPhone', 'Test-User-Agent']) {
    const info = analyzer.analyze(ua);
    t.equal(info.declaredBot, false, `${ua}: not a crawler`);
    t.equal(info.malformed, true, `${ua}: malformed`);
    t.equal(info.malformedReason, 'placeholder', ua);
  }
});
