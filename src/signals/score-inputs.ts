// What the score reads of a lookup: the flags of the table of reasons (reasons.ts) and the
// history's facts. Apart from score.ts so the table of reasons can name its flags without
// importing the model that reads the table.
import type { HistoryFacts } from './history.ts';

export interface ScoreInputs {
  // hard, deterministic
  ipBogon: boolean;
  uaMalformed: boolean;
  ifaMalformed: boolean;
  ifaKnownBad: boolean;
  deviceImpossible: boolean;
  // GIVT
  declaredBot: boolean;
  /** A declared bot naming an AI agent or AI crawler (crawlers.ts, data/ai-agents.txt); declaredBot is then false. */
  aiAgent: boolean;
  /**
   * A declared bot naming an uptime monitor (Pingdom, UptimeRobot, Datadog Synthetics…) from
   * that monitor's published probe addresses (bot-services.ts); declaredBot and aiAgent are then false.
   */
  monitor: boolean;
  automation: boolean;
  ipHosting: boolean;
  // SIVT
  ipVpn: boolean;
  ipProxy: boolean;
  ipTor: boolean;
  /** An iCloud Private Relay egress (published ranges): real users behind it, so weak. */
  ipRelay: boolean;
  /**
   * A UA claiming a crawler whose operator publishes its addresses, from outside them
   * (crawlers.ts): a bot masquerading as that crawler; declaredBot and aiAgent are then false.
   */
  crawlerSpoofed: boolean;
  uaInconsistent: boolean;
  /** An OpenRTB `device.sua` (client hints) contradicts the UA string (sua.ts). */
  suaMismatch: boolean;
  /** An OpenRTB `device.ifa_type` names another platform's device ID than the device's (ifa.ts). */
  ifaTypeMismatch: boolean;
  /** An OpenRTB imp stitched server-side (`ssai` 2, 3) from a data-centre IP or a server's HTTP-library UA. */
  ssaiSpoof: boolean;
  geoMismatch: boolean;
  schainPresent: boolean;
  schainValid: boolean;
  schainVerified: boolean;
  schainComplete: boolean;
  /** The publisher's ads.txt / app-ads.txt does not authorise the seller (unknown is false). */
  sellerUnauthorized: boolean;
  /** The app bundle ID is of another store's form than the UA's OS, or of none (app-bundle.ts). */
  appBundleMalformed: boolean;
  zeroIfa: boolean;
  // history
  history: HistoryFacts;
}
