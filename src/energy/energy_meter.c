/*
 * energy_meter.c — choosing a source for a device, sampling it, and the sampling thread (see
 * energy.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/timer.h"
#include "core/alloc.h"
#include "energy/energy_impl.h"

/* ---------------------------------------------------------------------------------- */
/* sources                                                                             */

static bool is_nvidia(const dbk_device_info *dev) {
    return dev->vendor_id == 0x10de || !strncasecmp(dev->vendor, "nvidia", 6) || !strncasecmp(dev->name, "nvidia", 6);
}

dbk_status dbk_energy_source_open(const dbk_energy_config *cfg, dbk_energy_source **out) {
    *out = NULL;
    dbk_energy_source *s = dbk_calloc(1, sizeof *s);
    if (!s) return DBK_ERR_OUT_OF_HOST_MEMORY;
    const dbk_device_info *dev = cfg->device;
    const char *root = cfg->root && *cfg->root ? cfg->root : "";   /* "" + "/sys/..." = "/sys/..." */
    if (!strcmp(root, "/")) root = "";
    dbk_status st;
    if (dev->type == DBK_DEVICE_TYPE_CPU) st = dbk_energy_open_rapl(root, s);
    else if (dev->type == DBK_DEVICE_TYPE_GPU && is_nvidia(dev))
        st = dbk_energy_open_nvml(cfg->nvml_library ? cfg->nvml_library : "libnvidia-ml.so.1", dev, s);
    else if (dev->type == DBK_DEVICE_TYPE_GPU) st = dbk_energy_open_hwmon(root, dev, s);
    else st = dbk_set_error(DBK_ERR_NOT_FOUND, "no energy reader for %s (neither a CPU nor a GPU)", dev->name);
    if (st != DBK_OK) {
        dbk_energy_source_close(s);
        return st;
    }
    s->last_time = dbk_time_now();
    if (!s->counter) {
        s->last_watts = 0.0;
        for (int i = 0; i < s->nchan; i++) s->last_watts += (double)s->chan[i].last * s->unit_joules;
    }
    *out = s;
    return DBK_OK;
}

void dbk_energy_source_close(dbk_energy_source *s) {
    if (!s) return;
    dbk_energy_nvml_close(s->nvml);
    dbk_free(s);
}

static dbk_status read_channel(dbk_energy_source *s, int i, uint64_t *raw) {
    if (s->nvml) return dbk_energy_nvml_read(s, raw);
    return dbk_energy_read_sysfs(s->chan[i].path, raw);
}

dbk_status dbk_energy_source_sample(dbk_energy_source *s, double now, double *joules) {
    if (s->counter) {
        uint64_t raw[DBK_ENERGY_MAX_CHANNELS];
        for (int i = 0; i < s->nchan; i++) DBK_TRY(read_channel(s, i, &raw[i]));
        for (int i = 0; i < s->nchan; i++) { /* all read first: a failure leaves the state as it was */
            dbk_energy_channel *c = &s->chan[i];
            uint64_t delta;
            if (raw[i] >= c->last) delta = raw[i] - c->last;
            else if (c->wrap > c->last) delta = c->wrap - c->last + raw[i];   /* wrapped once */
            else
                return dbk_set_error(DBK_ERR_DEVICE, "the %s energy counter %s went back from %llu to %llu (reset, or "
                                     "not sampled within one wrap)", s->name, c->path[0] ? c->path : "",
                                     (unsigned long long)c->last, (unsigned long long)raw[i]);
            s->joules += (double)delta * s->unit_joules;
        }
        for (int i = 0; i < s->nchan; i++) s->chan[i].last = raw[i];
    } else {
        double watts = 0.0;
        for (int i = 0; i < s->nchan; i++) {
            uint64_t raw;
            DBK_TRY(read_channel(s, i, &raw));
            watts += (double)raw * s->unit_joules;
        }
        if (now > s->last_time) s->joules += (now - s->last_time) * 0.5 * (watts + s->last_watts);
        s->last_watts = watts;
    }
    s->last_time = now;
    *joules = s->joules;
    return DBK_OK;
}

const char *dbk_energy_source_name(const dbk_energy_source *s) { return s->name; }
const char *dbk_energy_source_scope(const dbk_energy_source *s) { return s->scope; }
bool        dbk_energy_source_is_counter(const dbk_energy_source *s) { return s->counter; }

/* ---------------------------------------------------------------------------------- */
/* the meter                                                                           */

struct dbk_energy_meter {
    dbk_energy_source *src;
    pthread_mutex_t    lock;
    pthread_cond_t     wake;
    pthread_t          thread;
    bool               started, stop, failed;
    char               failure[512];
    double             joules, interval;
    long               samples;
};

/* One sample under the lock; the first failure is kept, with its reason. */
static bool sample_locked(dbk_energy_meter *m) {
    if (m->failed) return false;
    double j;
    if (dbk_energy_source_sample(m->src, dbk_time_now(), &j) != DBK_OK) {
        m->failed = true;
        snprintf(m->failure, sizeof m->failure, "%s", dbk_last_error());
        return false;
    }
    m->joules = j;
    m->samples++;
    return true;
}

static void *sampler(void *arg) {
    dbk_energy_meter *m = arg;
    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        double at = (double)until.tv_sec + until.tv_nsec * 1e-9 + m->interval;
        until.tv_sec = (time_t)at;
        until.tv_nsec = (long)((at - (double)until.tv_sec) * 1e9);
        int rc = 0;
        while (!m->stop && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&m->wake, &m->lock, &until);
        if (!m->stop) sample_locked(m);
    }
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

dbk_status dbk_energy_meter_create(const dbk_energy_config *cfg, dbk_energy_meter **out) {
    *out = NULL;
    dbk_energy_meter *m = dbk_calloc(1, sizeof *m);
    if (!m) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = dbk_energy_source_open(cfg, &m->src);
    if (st != DBK_OK) {
        dbk_free(m);
        return st;
    }
    m->interval = cfg->interval > 0 ? cfg->interval : m->src->counter ? 1.0 : 0.1;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&m->thread, NULL, sampler, m) != 0) {
        dbk_energy_meter_destroy(m);
        return dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "cannot start the energy sampling thread");
    }
    m->started = true;
    *out = m;
    return DBK_OK;
}

void dbk_energy_meter_destroy(dbk_energy_meter *m) {
    if (!m) return;
    if (m->started) {
        pthread_mutex_lock(&m->lock);
        m->stop = true;
        pthread_cond_signal(&m->wake);
        pthread_mutex_unlock(&m->lock);
        pthread_join(m->thread, NULL);
    }
    pthread_cond_destroy(&m->wake);
    pthread_mutex_destroy(&m->lock);
    dbk_energy_source_close(m->src);
    dbk_free(m);
}

bool dbk_energy_meter_joules(dbk_energy_meter *m, double *joules) {
    pthread_mutex_lock(&m->lock);
    bool ok = sample_locked(m);
    if (ok) *joules = m->joules;
    pthread_mutex_unlock(&m->lock);
    return ok;
}

const char *dbk_energy_meter_failure(dbk_energy_meter *m) {
    pthread_mutex_lock(&m->lock);
    const char *f = m->failure;   /* written once, when the first read fails */
    pthread_mutex_unlock(&m->lock);
    return f;
}
const char *dbk_energy_meter_source(const dbk_energy_meter *m) { return m->src->name; }
const char *dbk_energy_meter_scope(const dbk_energy_meter *m) { return m->src->scope; }
bool        dbk_energy_meter_is_counter(const dbk_energy_meter *m) { return m->src->counter; }
double      dbk_energy_meter_interval(const dbk_energy_meter *m) { return m->interval; }
long dbk_energy_meter_samples(dbk_energy_meter *m) {
    pthread_mutex_lock(&m->lock);
    long n = m->samples;
    pthread_mutex_unlock(&m->lock);
    return n;
}
