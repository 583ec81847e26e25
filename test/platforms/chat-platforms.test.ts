import { handleContract } from "./chat-platform-handles.contract";
import { chatPlatformContract } from "./chat-platform.contract";
import { discord } from "./contract/discord";
import { slack } from "./contract/slack";
import { telegram } from "./contract/telegram";
import { whatsapp } from "./contract/whatsapp";

// One suite, every chat platform: each adapter through the relay against its fake server.
chatPlatformContract(telegram);
chatPlatformContract(discord);
chatPlatformContract(slack);
chatPlatformContract(whatsapp);
// And the platforms that send uploaded content again by a handle.
handleContract(telegram);
handleContract(whatsapp);
