"""Embedder benchmark: what a local embedder costs and whether it sees paraphrase.

For each named embedder: load time and resident memory added by the model (the first call), embedding time
per item in a batch of 64 short texts and per query (one text, as a window embeds its query), and issue
#33's paraphrase probe: the rank of "The user can't accept Redis Cluster; the ops team is too small" among
60 unrelated facts for "Which caching solution do you recommend?", and of its Chinese twin (1 is best).

    python -m bench.embedders [--embedders hashing,wordllama,minilm] [--queries 50]

Times are wall-clock medians (minimum beside them); a busy machine inflates them, so the load average is
printed. numpy's BLAS threads follow OPENBLAS_NUM_THREADS (set it before starting).
"""

# ruff: noqa: RUF001 - the Chinese probe uses fullwidth punctuation on purpose.

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

import numpy as np

from service.settings import Settings
from service.vectors.embedders import build_embedder

TARGET = "The user can't accept Redis Cluster; the ops team is too small"
QUERY = "Which caching solution do you recommend?"
TARGET_ZH = "用户不能接受 Redis 集群；运维团队太小了。"
QUERY_ZH = "你推荐哪种缓存方案？"
DISTRACTORS = [
    "The user's cat is called Snowball.",
    "Our data warehouse runs on ClickHouse.",
    "The user prefers dark mode in every editor.",
    "The team deploys to production every Tuesday.",
    "The user's sister lives in Lisbon.",
    "The frontend is written in TypeScript with React.",
    "The user is allergic to peanuts.",
    "CI runs on GitHub Actions with four parallel jobs.",
    "The user drinks two cups of coffee each morning.",
    "The API gateway is Kong, version 3.",
    "The user's birthday is on 14 March.",
    "The main database is PostgreSQL 16 with logical replication.",
    "The user plays tennis on Saturdays.",
    "Logs are shipped to Loki and kept for 30 days.",
    "The user's manager is called Priya.",
    "The mobile app targets Android 12 and later.",
    "The user moved to Berlin last year.",
    "Payments go through Stripe.",
    "The user is learning Japanese.",
    "The office Wi-Fi password changes monthly.",
    "The user likes spicy Thai food.",
    "Kubernetes clusters run in two regions.",
    "The user reads science fiction before bed.",
    "Feature flags are managed with LaunchDarkly.",
    "The user's laptop is a ThinkPad X1 Carbon.",
    "Search is powered by Elasticsearch 8.",
    "The user has a daughter who is six.",
    "The team writes design docs before big changes.",
    "The user commutes by bicycle.",
    "Secrets live in HashiCorp Vault.",
    "The user is vegetarian on weekdays.",
    "Metrics are scraped by Prometheus every 15 seconds.",
    "The user's favourite band is Radiohead.",
    "The release branch is cut every two weeks.",
    "The user runs a marathon every spring.",
    "Error tracking uses Sentry.",
    "The user's car is an electric Renault.",
    "Infrastructure is described in Terraform.",
    "The user volunteers at an animal shelter.",
    "The backend services are written in Go and Python.",
    "The user's timezone is Central European Time.",
    "Email is sent through Amazon SES.",
    "The user is afraid of flying.",
    "Code review needs two approvals.",
    "The user grew up in Porto.",
    "The data pipeline is orchestrated by Airflow.",
    "The user plays the piano badly.",
    "Images are stored in S3 with lifecycle rules.",
    "The user's partner is a nurse.",
    "On-call rotates weekly among five engineers.",
    "The user dislikes long meetings.",
    "The message broker is Kafka with three brokers.",
    "The user's dog is a beagle named Max.",
    "Authentication uses OAuth 2 with Keycloak.",
    "The user takes the train to visit family.",
    "The test suite takes twelve minutes.",
    "The user's favourite season is autumn.",
    "The company uses Slack for chat.",
    "The user studied physics at university.",
    "Backups are taken nightly and tested monthly.",
]
DISTRACTORS_ZH = [
    "数据仓库用的是 ClickHouse。",
    "用户的猫叫小白。",
    "用户喜欢在编辑器里用深色主题。",
    "团队每周二发布到生产环境。",
    "用户的姐姐住在里斯本。",
    "前端用 TypeScript 和 React 编写。",
    "用户对花生过敏。",
    "持续集成在 GitHub Actions 上运行。",
    "用户每天早上喝两杯咖啡。",
    "API 网关是 Kong。",
    "用户的生日是三月十四日。",
    "主数据库是 PostgreSQL 16。",
    "用户每周六打网球。",
    "日志发送到 Loki，保留三十天。",
    "用户的经理叫 Priya。",
    "移动应用支持安卓 12 及以上。",
    "用户去年搬到了柏林。",
    "支付通过 Stripe 完成。",
    "用户在学日语。",
    "办公室的无线密码每月更换。",
    "用户喜欢吃辣的泰国菜。",
    "Kubernetes 集群部署在两个区域。",
    "用户睡前读科幻小说。",
    "功能开关用 LaunchDarkly 管理。",
    "用户的笔记本是 ThinkPad。",
    "搜索由 Elasticsearch 8 支持。",
    "用户有一个六岁的女儿。",
    "团队在大改动前写设计文档。",
    "用户骑自行车通勤。",
    "密钥存放在 Vault 里。",
    "用户工作日吃素。",
    "Prometheus 每十五秒抓取一次指标。",
    "用户最喜欢的乐队是 Radiohead。",
    "每两周切一次发布分支。",
    "用户每年春天跑马拉松。",
    "错误追踪用 Sentry。",
    "用户开一辆电动雷诺。",
    "基础设施用 Terraform 描述。",
    "用户在动物收容所做志愿者。",
    "后端服务用 Go 和 Python 编写。",
    "用户的时区是中欧时间。",
    "邮件通过 Amazon SES 发送。",
    "用户害怕坐飞机。",
    "代码评审需要两个批准。",
    "用户在波尔图长大。",
    "数据管道由 Airflow 编排。",
    "用户钢琴弹得不好。",
    "图片存储在 S3 上。",
    "用户的伴侣是护士。",
    "值班每周在五位工程师之间轮换。",
    "用户不喜欢长会议。",
    "消息队列是三个节点的 Kafka。",
    "用户的狗是一只叫 Max 的比格犬。",
    "认证使用 Keycloak 的 OAuth 2。",
    "用户坐火车去看家人。",
    "测试套件要跑十二分钟。",
    "用户最喜欢秋天。",
    "公司用 Slack 聊天。",
    "用户大学学的是物理。",
    "每晚备份，每月测试恢复。",
]


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def probe_rank(vectors: np.ndarray, query: np.ndarray) -> int:
    """The rank of row 0 (the answer) among all rows by cosine to the query (1 is best)."""
    scores = vectors @ query
    return int((scores > scores[0]).sum()) + 1


async def measure(name: str, *, queries: int) -> dict[str, float]:
    dim = Settings(embedder=name).vectors.embedding_dim  # the embedder's own size (wordllama: 256)
    embedder = build_embedder(name, dim=dim, url=None, model=None, api_key=None)
    before = _rss_mb()
    start = time.perf_counter()
    await embedder.embed(["load"])
    load = time.perf_counter() - start
    rss = _rss_mb() - before
    batch = (DISTRACTORS + DISTRACTORS_ZH)[:64]
    batch_times = []
    for _ in range(3):
        start = time.perf_counter()
        await embedder.embed(batch)
        batch_times.append(time.perf_counter() - start)
    query_times = []
    for i in range(queries):
        text = QUERY if i % 2 else "what does the user think about the release cadence?"
        start = time.perf_counter()
        await embedder.embed([text])
        query_times.append(time.perf_counter() - start)
    ranks = {}
    for language, query, target, distractors in (
        ("en", QUERY, TARGET, DISTRACTORS),
        ("zh", QUERY_ZH, TARGET_ZH, DISTRACTORS_ZH),
    ):
        vectors = np.array(await embedder.embed([target, *distractors]))
        ranks[language] = probe_rank(vectors, np.array((await embedder.embed([query]))[0]))
    await embedder.close()
    return {
        "load_s": load,
        "rss_mb": rss,
        "item_ms": statistics.median(batch_times) / len(batch) * 1000,
        "query_ms": statistics.median(query_times) * 1000,
        "query_min_ms": min(query_times) * 1000,
        "rank_en": ranks["en"],
        "rank_zh": ranks["zh"],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--embedders", default="hashing,wordllama,minilm")
    p.add_argument("--queries", type=int, default=50)
    args = p.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; probe: rank of the answer of 61")
    print(f"{'embedder':10} {'load':>7} {'RSS +':>8} {'per item':>9} {'query p50 (min)':>16} {'probe en':>9} {'zh':>4}")
    for name in args.embedders.split(","):
        m = asyncio.run(measure(name, queries=args.queries))
        print(
            f"{name:10} {m['load_s']:6.2f}s {m['rss_mb']:6.0f}MB {m['item_ms']:7.2f}ms "
            f"{m['query_ms']:7.2f} ({m['query_min_ms']:.2f}) ms {m['rank_en']:>9} {m['rank_zh']:>4}"
        )


if __name__ == "__main__":
    main()
