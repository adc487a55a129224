"""Geo on sorted sets as a user meets it: GEOADD's 52-bit scores, GEOPOS,
GEOHASH, GEODIST, GEORADIUS/GEORADIUSBYMEMBER (and _RO), GEOSEARCH and
GEOSEARCHSTORE, with Redis's output formats. Expected values are
redis-server 7.0.15's; a live redis-server also answers random searches
beside this server."""
import random

import pytest
import redis

SICILY = [13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania"]


def test_geoadd_stores_redis_scores(r):
    assert r.execute_command("GEOADD", "Sicily", *SICILY) == 2
    assert r.zscore("Sicily", "Palermo") == 3479099956230698.0
    assert r.zscore("Sicily", "Catania") == 3479447370796909.0
    assert r.type("Sicily") == b"zset"
    assert r.execute_command("GEOADD", "Sicily", "NX", 13.0, 38.0, "Palermo") == 0
    assert r.execute_command("GEOADD", "Sicily", "XX", "CH", 13.361389, 38.115556, "Palermo") == 0
    with pytest.raises(redis.ResponseError, match="invalid longitude,latitude pair 200.000000,100.000000"):
        r.execute_command("GEOADD", "Sicily", 200, 100, "Nowhere")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("GEOADD", "Sicily", "NX", "XX", 1, 1, "x")


def test_pos_hash_dist(r, c):
    r.execute_command("GEOADD", "Sicily", *SICILY)
    assert c.command("GEOPOS", "Sicily", "Palermo", "nope") == [
        [b"13.36138933897018433", b"38.11555639549629859"], None]
    assert c.command("GEOHASH", "Sicily", "Palermo", "Catania", "nope") == [b"sqc8b49rny0", b"sqdtr74hyu0", None]
    assert c.command("GEODIST", "Sicily", "Palermo", "Catania") == b"166274.1516"
    assert c.command("GEODIST", "Sicily", "Palermo", "Catania", "km") == b"166.2742"
    assert c.command("GEODIST", "Sicily", "Palermo", "Catania", "mi") == b"103.3182"
    assert r.execute_command("GEODIST", "Sicily", "Palermo", "nope") is None
    with pytest.raises(redis.ResponseError, match="unsupported unit provided. please use M, KM, FT, MI"):
        r.execute_command("GEODIST", "Sicily", "Palermo", "Catania", "yd")


def test_searches(r, c):
    r.execute_command("GEOADD", "Sicily", *SICILY)
    assert r.execute_command("GEORADIUS", "Sicily", 15, 37, 200, "km", "WITHDIST") == [
        [b"Palermo", b"190.4424"], [b"Catania", b"56.4413"]]
    assert c.command("GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHCOORD", "ASC") == [
        [b"Catania", [b"15.08726745843887329", b"37.50266842333162032"]],
        [b"Palermo", [b"13.36138933897018433", b"38.11555639549629859"]]]
    assert r.execute_command("GEORADIUSBYMEMBER", "Sicily", "Palermo", 200, "km", "WITHHASH") == [
        [b"Palermo", 3479099956230698], [b"Catania", 3479447370796909]]
    assert r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", 15, 37, "BYBOX", 400, 400, "km", "ASC", "WITHDIST") == [
        [b"Catania", b"56.4413"], [b"Palermo", b"190.4424"]]
    assert r.execute_command("GEOSEARCH", "Sicily", "FROMMEMBER", "Catania", "BYRADIUS", 100, "km") == [b"Catania"]
    assert r.execute_command("GEOSEARCHSTORE", "near", "Sicily", "FROMLONLAT", 15, 37, "BYRADIUS", 200, "km",
                             "STOREDIST") == 2
    assert r.zrange("near", 0, -1, withscores=True) == [(b"Catania", 56.4412578701582), (b"Palermo", 190.44242984775784)]
    assert r.execute_command("GEORADIUS", "Sicily", 15, 37, 200, "km", "STORE", "copy") == 2
    assert r.zrange("copy", 0, -1, withscores=True) == r.zrange("Sicily", 0, -1, withscores=True)
    assert r.execute_command("GEORADIUS_RO", "Sicily", 15, 37, 1, "km") == []
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("GEORADIUS_RO", "Sicily", 15, 37, 200, "km", "STORE", "x")
    with pytest.raises(redis.ResponseError, match="exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH"):
        r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", 15, 37, "ASC", "WITHDIST")
    with pytest.raises(redis.ResponseError, match="the ANY argument requires COUNT argument"):
        r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", 15, 37, "BYRADIUS", 1, "km", "ANY")
    with pytest.raises(redis.ResponseError, match="could not decode requested zset member"):
        r.execute_command("GEORADIUSBYMEMBER", "Sicily", "Rome", 1, "km")


@pytest.mark.loop_only
def test_random_searches_answer_as_a_live_redis(r, real_redis):
    other = real_redis.client()
    other.flushall()
    rng = random.Random(7)
    points = []
    for i in range(1500):
        points += [rng.uniform(-180, 180), rng.uniform(-85, 85), "m%d" % i]
    for c in (r, other):
        for i in range(0, len(points), 300):
            c.execute_command("GEOADD", "g", *points[i:i + 300])
    assert r.zrange("g", 0, -1, withscores=True) == other.zrange("g", 0, -1, withscores=True)
    for i in range(150):
        lon, lat = rng.uniform(-180, 180), rng.uniform(-85, 85)
        radius = rng.choice([50, 500, 2000, 8000])
        for command in (["GEORADIUS", "g", lon, lat, radius, "km", "WITHDIST", "WITHCOORD", "WITHHASH", "ASC"],
                        ["GEOSEARCH", "g", "FROMLONLAT", lon, lat, "BYBOX", radius, radius / 2, "km", "DESC", "COUNT", 4],
                        ["GEOSEARCH", "g", "FROMMEMBER", "m%d" % i, "BYRADIUS", radius, "mi", "WITHDIST"]):
            assert r.execute_command(*command) == other.execute_command(*command), command
    # A geo set DUMPed here restores on Redis with the same answers.
    other.restore("copied", 0, r.dump("g"))
    assert other.execute_command("GEOPOS", "copied", "m1", "m2") == r.execute_command("GEOPOS", "g", "m1", "m2")
