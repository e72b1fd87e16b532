#!/usr/bin/env python3
"""The generated inventories of the fleet's mix (tests/fleet/fleet.sh): boxes
a junk rack holds besides the recorded ones in tests/inventories/, written
as `kiln inventory --json` writes them, from qemu-4disk.json's machine with
other disks. fleet.sh's MIX table says which layout of templates/rack.yaml
each must get (or none: it enlists).

    inventories.py SRC OUTDIR     writes OUTDIR/gen-*.json
"""
import copy
import json
import sys

G = 1 << 30
T = 1000 ** 4


def disk(base, i, size, rot, serial=None, model=None):
    d = copy.deepcopy(base)
    name = "sd" + chr(ord("a") + i)
    d.update(name=name, path="/dev/" + name, size=size, rotational=rot, transport="sata",
             serial=serial or "GEN-%s-%d" % ("HDD" if rot else "SSD", i), model=model)
    return d


def main():
    src, out = sys.argv[1], sys.argv[2]
    inv = json.load(open(src + "/tests/inventories/qemu-4disk.json"))
    base = inv["disks"][0]
    boxes = {
        # two spinning disks: no layout holds two HDDs
        "gen-2hdd": [(T, True)] * 2,
        # three SSDs: one too many for the mirror, one too few for raid10
        "gen-3ssd": [(480 * 10 ** 9, False)] * 3,
        # four HDDs, one of them smaller than the rest (still over 900G)
        "gen-4hdd-odd": [(2 * T, True)] * 3 + [(T, True)],
        # six disks: four HDDs and two SSDs; the HDD layout comes first
        "gen-6mix": [(T, True)] * 4 + [(240 * 10 ** 9, False)] * 2,
        # two SSDs and two small HDDs (under 900G): the mirror
        "gen-2ssd-2hdd": [(480 * 10 ** 9, False)] * 2 + [(500 * 10 ** 9, True)] * 2,
        # four SSDs behind a bridge that gives them one serial (they collide)
        "gen-4ssd-twins": [(480 * 10 ** 9, False, "USB-BRIDGE-0001")] * 4,
    }
    for name, disks in boxes.items():
        b = copy.deepcopy(inv)
        b["disks"] = [disk(base, i, *d) for i, d in enumerate(disks)]
        with open("%s/%s.json" % (out, name), "w") as f:
            json.dump(b, f, indent=1)


main()
