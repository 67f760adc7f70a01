// The peer of a Unix socket, by inode, from the kernel's socket diagnostics
// (NETLINK_SOCK_DIAG, UNIX_DIAG_PEER): what `ss -x` shows, readable by any user for any
// socket. Swift cannot build the netlink messages' packed headers comfortably, and this is
// the only way the kernel tells which socket is the other end of a connected one.
#include "CTouchgateSys.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int CTouchgateSys_unix_peer_inode(uint32_t inode, uint32_t *peer) {
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -errno;
    struct {
        struct nlmsghdr header;
        struct unix_diag_req request;
    } message;
    memset(&message, 0, sizeof message);
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST;
    message.request.sdiag_family = AF_UNIX;
    message.request.udiag_states = ~0u;
    message.request.udiag_ino = inode;
    message.request.udiag_show = UDIAG_SHOW_PEER;
    // No cookie: the lookup is by inode alone (INET_DIAG_NOCOOKIE).
    message.request.udiag_cookie[0] = ~0u;
    message.request.udiag_cookie[1] = ~0u;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, &message, sizeof message, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        int saved = errno;
        close(fd);
        return -saved;
    }
    // One answer: the socket's description with its attributes, or an error.
    union {
        struct nlmsghdr header;
        char bytes[8192];
    } answer;
    ssize_t received;
    do {
        received = recv(fd, &answer, sizeof answer, 0);
    } while (received < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    if (received < 0) return -saved;
    struct nlmsghdr *header = &answer.header;
    if (!NLMSG_OK(header, (size_t)received)) return -EBADMSG;
    if (header->nlmsg_type == NLMSG_ERROR) {
        const struct nlmsgerr *error = NLMSG_DATA(header);
        return header->nlmsg_len >= NLMSG_LENGTH(sizeof *error) && error->error < 0 ? error->error : -EBADMSG;
    }
    if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY || header->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
        return -EBADMSG;
    const struct unix_diag_msg *described = NLMSG_DATA(header);
    if (described->udiag_ino != inode) return -EBADMSG;
    *peer = 0;
    size_t length = header->nlmsg_len - NLMSG_LENGTH(sizeof *described);
    const struct nlattr *attribute = (const struct nlattr *)((const char *)described + NLMSG_ALIGN(sizeof *described));
    while (length >= sizeof *attribute && attribute->nla_len >= sizeof *attribute && attribute->nla_len <= length) {
        if ((attribute->nla_type & NLA_TYPE_MASK) == UNIX_DIAG_PEER && attribute->nla_len >= NLA_HDRLEN + sizeof(uint32_t)) {
            memcpy(peer, (const char *)attribute + NLA_HDRLEN, sizeof(uint32_t));
            return 0;
        }
        size_t step = NLA_ALIGN(attribute->nla_len);
        if (step > length) break;
        length -= step;
        attribute = (const struct nlattr *)((const char *)attribute + step);
    }
    return 0;
}
