import t from 'tap';
import { FLEET_BOT_IP_SLOTS, FleetBotIps, allocateFleetBotIps } from '../../src/signals/fleet-bot-ips.ts';
import { BotIpTally, BotIpTracker, MAX_IPS } from '../../src/prebid/bot-ip-tracker.ts';
import { History } from '../../src/signals/history.ts';

t.test('the fleet set: replaced whole, read by history keys, bounded', async (t) => {
  const mem = allocateFleetBotIps();
  const writer = new FleetBotIps(mem);
  const reader = new FleetBotIps(mem);
  const h = History.create();
  const key = (ip: string) => {
    const k = h.keysFor({ ip, uid: '', ifa: '', ua: '' });
    return [k.ipHi, k.ipLo] as const;
  };
  t.notOk(reader.has(...key('203.0.113.9')), 'empty at first');
  writer.replace([key('203.0.113.9'), key('2001:db8:7:7::1')]);
  t.ok(reader.has(...key('203.0.113.9')));
  t.ok(reader.has(...key('::ffff:203.0.113.9')), 'mapped IPv4 is the same address');
  t.ok(reader.has(...key('2001:db8:7:7::ffff')), 'IPv6 by its /64');
  t.notOk(reader.has(...key('203.0.113.10')));
  writer.replace([key('198.51.100.1')]);
  t.notOk(reader.has(...key('203.0.113.9')), 'the old set is gone after a replace');
  t.equal(reader.size, 1);
  const many = Array.from({ length: FLEET_BOT_IP_SLOTS }, (_, i) => key(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`));
  writer.replace(many);
  t.equal(reader.size, FLEET_BOT_IP_SLOTS / 4, 'at most a quarter of the slots are filled');
});

t.test("a thread's tracker: entered on invalid evidence, counted after, bounded", async (t) => {
  const tr = new BotIpTracker();
  tr.note('192.0.2.1', false);
  t.same(tr.take(), [], 'a valid lookup alone does not enter');
  tr.note('192.0.2.1', true);
  tr.note('192.0.2.1', false);
  tr.note('192.0.2.1', true);
  t.same(tr.take(), [{ ip: '192.0.2.1', lookups: 3, invalid: 2 }]);
  for (let i = 0; i < 2 * MAX_IPS; i++) tr.note(`10.0.${i >> 8}.${i & 255}`, true);
  t.equal(tr.take().length, MAX_IPS);
  const tally = new BotIpTally();
  tally.add([{ ip: 'a', lookups: 2, invalid: 1 }]);
  tally.add([{ ip: 'a', lookups: 3, invalid: 3 }]);
  t.same(tally.take(), [{ ip: 'a', lookups: 5, invalid: 4 }], 'threads summed per IP');
});
