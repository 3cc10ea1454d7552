// The start-up note about guest halt-polling (src/runtime/halt-poll.ts): only a KVM guest on
// the haltpoll cpuidle driver and governor with guest_halt_poll_ns 0 gets it. The cases give
// the sysfs files' texts (null: no such file), so they hold on any host.
import t from 'tap';
import { CPUIDLE_DRIVER, CPUIDLE_GOVERNOR, HALT_POLL_NS, haltPollNote, type ReadText } from '../../src/runtime/halt-poll.ts';

const host = (driver: string | null, ns: string | null, governor: string | null = driver): ReadText => (path) =>
  path === CPUIDLE_DRIVER ? driver : path === CPUIDLE_GOVERNOR ? governor : path === HALT_POLL_NS ? ns : null;

t.test('a guest whose idle vCPUs halt at once gets the note', async (t) => {
  t.same(haltPollNote(host('haltpoll\n', '0\n')), { driver: 'haltpoll', guestHaltPollNs: 0 });
});

t.test('a guest that polls before halting, and a garbled value, get none', async (t) => {
  t.equal(haltPollNote(host('haltpoll\n', '200000\n')), null, "the kernel's default");
  t.equal(haltPollNote(host('haltpoll\n', '1\n')), null);
  t.equal(haltPollNote(host('haltpoll\n', 'off\n')), null);
  t.equal(haltPollNote(host('haltpoll\n', '')), null);
  t.equal(haltPollNote(host('haltpoll\n', null)), null, 'no haltpoll module parameters');
});

t.test('other cpuidle drivers and hosts without cpuidle get none', async (t) => {
  t.equal(haltPollNote(host('intel_idle\n', '0\n')), null, 'bare metal');
  t.equal(haltPollNote(host('acpi_idle\n', '0\n')), null);
  t.equal(haltPollNote(host('none\n', '0\n')), null);
  t.equal(haltPollNote(host(null, null)), null, 'not Linux, or no cpuidle');
  t.equal(haltPollNote(host('haltpoll\n', '0\n', 'menu\n')), null, 'the haltpoll driver under the menu governor: the value is not read');
  t.equal(haltPollNote(host('haltpoll\n', '0\n', null)), null, 'no governor file');
});
